package dev.gpucompute.autoconfigure.metrics;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.awaitility.Awaitility;

/**
 * A real Prometheus server ({@link PrometheusBinary}) scraping one application's
 * {@code /actuator/prometheus} every second as job {@code gpu-app}, with its HTTP query API. Close it
 * to stop the process.
 */
final class PrometheusServer implements AutoCloseable {

	private static final Duration PATIENCE = Duration.ofSeconds(60);

	private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

	private final Process process;

	private final Thread reaper;

	private final String api;

	private PrometheusServer(Process process, Thread reaper, String api) {
		this.process = process;
		this.reaper = reaper;
		this.api = api;
	}

	/** Starts Prometheus with its data and log in {@code dir}, scraping the application on {@code appPort}. */
	static PrometheusServer start(Path dir, int appPort) throws IOException {
		int port = freePort();
		Path config = dir.resolve("prometheus.yml");
		Files.writeString(config, """
				global:
				  scrape_interval: 1s
				  evaluation_interval: 1s
				scrape_configs:
				  - job_name: gpu-app
				    metrics_path: /actuator/prometheus
				    static_configs:
				      - targets: ['127.0.0.1:%d']
				""".formatted(appPort));
		Path log = dir.resolve("prometheus.log");
		Process process = new ProcessBuilder(PrometheusBinary.find().toString(), "--config.file=" + config,
				"--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + port,
				"--log.level=warn")
			.redirectErrorStream(true)
			.redirectOutput(log.toFile())
			.start();
		Thread reaper = new Thread(process::destroyForcibly, "prometheus-reaper");
		Runtime.getRuntime().addShutdownHook(reaper);
		PrometheusServer server = new PrometheusServer(process, reaper, "http://127.0.0.1:" + port);
		try {
			Awaitility.await("Prometheus ready").atMost(PATIENCE).pollInterval(Duration.ofMillis(250)).until(() -> {
				if (!process.isAlive()) {
					throw new IllegalStateException(
							"Prometheus exited with " + process.exitValue() + ":\n" + Files.readString(log));
				}
				return server.status("/-/ready") == 200;
			});
		}
		catch (RuntimeException ex) {
			server.close();
			throw new IllegalStateException("Prometheus did not start; its log:\n" + Files.readString(log), ex);
		}
		return server;
	}

	/** Waits until every query has a result (a scrape of the application has arrived). */
	void awaitResults(String... promql) {
		Awaitility.await("a scrape of the application").atMost(PATIENCE).pollInterval(Duration.ofMillis(250)).until(() -> {
			for (String query : promql) {
				if (result(query).isEmpty()) {
					return false;
				}
			}
			return true;
		});
	}

	/** The instant vector of {@code promql}: each series' labels under {@code metric}, its sample under {@code value}. */
	List<Map<String, Object>> result(String promql) throws IOException, InterruptedException {
		DocumentContext response = query(promql);
		if (!"success".equals(response.read("$.status", String.class))) {
			throw new IllegalStateException(promql + ": " + response.jsonString());
		}
		return response.read("$.data.result");
	}

	/** The query API's whole answer (status, data or error). */
	DocumentContext query(String promql) throws IOException, InterruptedException {
		return JsonPath.parse(get("/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)));
	}

	/** The value of {@code promql}, which must have exactly one series. */
	double value(String promql) throws IOException, InterruptedException {
		List<Map<String, Object>> result = result(promql);
		if (result.size() != 1) {
			throw new AssertionError(promql + " has " + result.size() + " series, expected 1: " + result);
		}
		List<?> sample = (List<?>) result.get(0).get("value");
		return Double.parseDouble((String) sample.get(1));
	}

	/** The names of the metrics scraped from the series matching {@code selector}. */
	Set<String> metricNames(String selector) throws IOException, InterruptedException {
		List<String> names = JsonPath.read(get("/api/v1/label/__name__/values?match[]="
				+ URLEncoder.encode(selector, StandardCharsets.UTF_8)), "$.data");
		return new HashSet<>(names);
	}

	private String get(String path) throws IOException, InterruptedException {
		return this.http
			.send(HttpRequest.newBuilder(URI.create(this.api + path)).timeout(Duration.ofSeconds(10)).GET().build(),
					HttpResponse.BodyHandlers.ofString())
			.body();
	}

	private int status(String path) {
		try {
			return this.http
				.send(HttpRequest.newBuilder(URI.create(this.api + path)).timeout(Duration.ofSeconds(2)).GET().build(),
						HttpResponse.BodyHandlers.discarding())
				.statusCode();
		}
		catch (IOException ex) {
			return -1;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return -1;
		}
	}

	@Override
	public void close() {
		this.process.destroy();
		try {
			if (!this.process.waitFor(20, TimeUnit.SECONDS)) {
				this.process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
			}
		}
		catch (InterruptedException ex) {
			this.process.destroyForcibly();
			Thread.currentThread().interrupt();
		}
		Runtime.getRuntime().removeShutdownHook(this.reaper);
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			return socket.getLocalPort();
		}
	}

}
