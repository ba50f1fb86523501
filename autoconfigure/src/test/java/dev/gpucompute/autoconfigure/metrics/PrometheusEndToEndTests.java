package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;

/**
 * End to end: a real Prometheus server scrapes the running application's
 * {@code /actuator/prometheus} every second; its HTTP API then returns the launch counter and the
 * pool gauges with the values the test produced, and every metric the Grafana dashboard queries is
 * in the scrape (and every dashboard query is valid PromQL for that server).
 *
 * <p>Uses the {@code prometheus} binary (Debian package {@code prometheus}); skipped with the reason
 * shown when it is absent, failed instead when {@code PROMETHEUS_REQUIRED=1}.
 */
@ExtendWith(PrometheusBinary.class)
@SpringBootTest(classes = PrometheusEndToEndTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.streams.pool-size=2", "gpu.streams.max-size=3", "gpu.cpu.threads=1",
				"gpu.metrics.kernel-timing=all", "management.endpoints.web.exposure.include=prometheus" })
@DirtiesContext
class PrometheusEndToEndTests {

	private static final int LAUNCHES = 5;

	private static final Duration PATIENCE = Duration.ofSeconds(60);

	private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

	@LocalServerPort
	private int appPort;

	@Autowired
	private GpuLauncher launcher;

	@Autowired
	private GpuContext context;

	@TempDir
	Path dir;

	private Process prometheus;

	/** Stops Prometheus should the test JVM exit without running {@link #stop()}. */
	private Thread reaper;

	private final List<StreamLease> leases = new ArrayList<>();

	@AfterEach
	void stop() throws InterruptedException {
		if (this.prometheus != null) {
			this.prometheus.destroy();
			if (!this.prometheus.waitFor(20, TimeUnit.SECONDS)) {
				this.prometheus.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
			}
			Runtime.getRuntime().removeShutdownHook(this.reaper);
		}
		this.leases.forEach(StreamLease::close);
	}

	@Test
	void prometheusScrapesTheMetersTheDashboardUses() throws Exception {
		Kernel noop = this.launcher.kernel("noop");
		for (int i = 0; i < LAUNCHES; i++) {
			this.launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
		}
		this.launcher.synchronize();
		Awaitility.await().atMost(PATIENCE).until(() -> noop.stats().timedLaunches() == LAUNCHES);
		// Lease the whole pool (it grows from 2 to its maximum of 3), then time out once.
		for (int i = 0; i < 3; i++) {
			this.leases.add(this.context.streams().acquire());
		}
		try {
			this.context.streams().acquire(Duration.ofMillis(10)).close();
			throw new AssertionError("the pool should have been exhausted");
		}
		catch (PoolExhaustedException expected) {
			// counted by gpu.streams.timeout
		}

		int port = freePort();
		startPrometheus(port);
		String api = "http://127.0.0.1:" + port;
		Awaitility.await("a scrape of the application").atMost(PATIENCE).pollInterval(Duration.ofMillis(250))
			.until(() -> hasResult(api, "up{job=\"gpu-app\"} == 1") && hasResult(api, "gpu_streams_active"));

		String app = "{job=\"gpu-app\", gpu=\"0\", backend=\"cpu\", uuid=\"" + this.context.device().uuid() + "\"}";
		assertThat(value(api, "gpu_kernel_launches_total{kernel=\"noop\", outcome=\"success\"}")).isEqualTo(LAUNCHES);
		assertThat(value(api, "gpu_kernel_launches_total{kernel=\"noop\", outcome=\"error\"}")).isZero();
		assertThat(value(api, "gpu_kernel_duration_seconds_count{kernel=\"noop\"}")).isEqualTo(LAUNCHES);
		assertThat(value(api, "gpu_streams_active" + app)).isEqualTo(3);
		assertThat(value(api, "gpu_streams_idle" + app)).isZero();
		assertThat(value(api, "gpu_streams_pending" + app)).isZero();
		assertThat(value(api, "gpu_streams_max" + app)).isEqualTo(3);
		assertThat(value(api, "gpu_streams_timeout_total" + app)).isEqualTo(1);
		assertThat(value(api, "gpu_memory_total_bytes" + app)).isEqualTo(this.context.device().totalMemoryBytes());

		DashboardQueries dashboard = DashboardQueries.load();
		Set<String> scraped = scrapedNames(api);
		Set<String> missing = new HashSet<>(dashboard.metricNames());
		missing.removeAll(DashboardQueries.EXTERNAL);
		missing.removeAll(scraped);
		assertThat(missing).as("dashboard metrics missing from the scrape").isEmpty();
		for (String query : dashboard.panelQueries()) {
			DocumentContext result = query(api, DashboardQueries.withoutVariables(query));
			assertThat(result.read("$.status", String.class)).as(query).isEqualTo("success");
		}
	}

	private void startPrometheus(int port) throws IOException {
		Path config = this.dir.resolve("prometheus.yml");
		Files.writeString(config, """
				global:
				  scrape_interval: 1s
				  evaluation_interval: 1s
				scrape_configs:
				  - job_name: gpu-app
				    metrics_path: /actuator/prometheus
				    static_configs:
				      - targets: ['127.0.0.1:%d']
				""".formatted(this.appPort));
		Path log = this.dir.resolve("prometheus.log");
		this.prometheus = new ProcessBuilder(PrometheusBinary.find().toString(), "--config.file=" + config,
				"--storage.tsdb.path=" + this.dir.resolve("data"), "--web.listen-address=127.0.0.1:" + port,
				"--log.level=warn")
			.redirectErrorStream(true)
			.redirectOutput(log.toFile())
			.start();
		Process started = this.prometheus;
		this.reaper = new Thread(started::destroyForcibly, "prometheus-reaper");
		Runtime.getRuntime().addShutdownHook(this.reaper);
		try {
			Awaitility.await("Prometheus ready").atMost(PATIENCE).pollInterval(Duration.ofMillis(250)).until(() -> {
				if (!this.prometheus.isAlive()) {
					throw new IllegalStateException("Prometheus exited with " + this.prometheus.exitValue() + ":\n"
							+ Files.readString(log));
				}
				return status("http://127.0.0.1:" + port + "/-/ready") == 200;
			});
		}
		catch (RuntimeException ex) {
			throw new IllegalStateException("Prometheus did not start; its log:\n" + Files.readString(log), ex);
		}
	}

	private Set<String> scrapedNames(String api) throws IOException, InterruptedException {
		String body = get(api + "/api/v1/label/__name__/values?match[]="
				+ URLEncoder.encode("{job=\"gpu-app\"}", StandardCharsets.UTF_8));
		List<String> names = JsonPath.read(body, "$.data");
		return new HashSet<>(names);
	}

	private double value(String api, String promql) throws IOException, InterruptedException {
		List<Map<String, Object>> result = query(api, promql).read("$.data.result");
		assertThat(result).as(promql).hasSize(1);
		List<?> sample = (List<?>) result.get(0).get("value");
		return Double.parseDouble((String) sample.get(1));
	}

	private boolean hasResult(String api, String promql) throws IOException, InterruptedException {
		List<?> result = query(api, promql).read("$.data.result");
		return !result.isEmpty();
	}

	private DocumentContext query(String api, String promql) throws IOException, InterruptedException {
		return JsonPath.parse(get(api + "/api/v1/query?query=" + URLEncoder.encode(promql, StandardCharsets.UTF_8)));
	}

	private String get(String url) throws IOException, InterruptedException {
		HttpResponse<String> response = this.http.send(
				HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build(),
				HttpResponse.BodyHandlers.ofString());
		return response.body();
	}

	private int status(String url) {
		try {
			return this.http
				.send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(2)).GET().build(),
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

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			return socket.getLocalPort();
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		KernelSource noop() {
			return KernelSource.named("noop").params(ParamType.INT).cpu((block, args) -> {
			});
		}

	}

}
