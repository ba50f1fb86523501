package dev.gpucompute.sample;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.command.InspectContainerResponse;
import com.github.dockerjava.api.model.DeviceRequest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.output.Slf4jLogConsumer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.ImageFromDockerfile;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The sample service as its users ship it: the image built from {@code sample-app/Dockerfile} on the
 * packaged jar, started with Testcontainers. The image starts and reports healthy, the README's
 * round trip gives the README's answer, Actuator shows the backend and the runtime version, and a
 * {@code docker stop} (SIGTERM) under load answers every request the service had accepted.
 *
 * <p>Runs in the integration-test phase of {@code mvn verify}, after the jar is packaged. Without
 * Docker, or without the images it needs, it is skipped within seconds, saying why
 * ({@link DockerPrerequisites}); with {@code CONTAINER_TEST_REQUIRED=1} (set by {@code .ci/run}
 * when it brought Docker up) that is a failure instead. {@code SAMPLE_APP_BASE_IMAGE} names the
 * Dockerfile's base image (default: the Dockerfile's own). With {@code GPU_REQUIRED=1} the
 * container requests every GPU of the host (a device request, like {@code docker run --gpus all};
 * the host needs the NVIDIA Container Toolkit and the base image the CUDA 12 runtime libraries)
 * and must run on the CUDA backend.
 */
class SampleAppContainerIT {

	private static final Logger logger = LoggerFactory.getLogger(SampleAppContainerIT.class);

	private static final Path JAR = Path.of(System.getProperty("sample.jar", "target/gpu-compute-sample-app.jar"));

	private static final Path DOCKERFILE = Path.of("Dockerfile").toAbsolutePath();

	private static final boolean GPU = "1".equals(System.getenv("GPU_REQUIRED"));

	private static final String BACKEND = GPU ? "CUDA" : "CPU";

	private static ImageFromDockerfile image;

	private static GenericContainer<?> app;

	private static Http http;

	/** Why the test cannot run here, or {@code null}. */
	private static String unavailable;

	@BeforeAll
	static void buildTheImageAndStartIt() {
		String base = System.getenv().getOrDefault("SAMPLE_APP_BASE_IMAGE", "");
		if (base.isBlank()) {
			base = DockerPrerequisites.defaultBaseImage(DOCKERFILE);
		}
		long checking = System.nanoTime();
		unavailable = DockerPrerequisites.unavailable(JAR, base);
		if (unavailable != null) {
			if ("1".equals(System.getenv("CONTAINER_TEST_REQUIRED"))) {
				fail("The container test is required (CONTAINER_TEST_REQUIRED=1) but cannot run: " + unavailable);
			}
			unavailable += " (checked in " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - checking) + " ms)";
			logger.warn("Container test skipped: {}", unavailable);
			return;
		}
		image = new ImageFromDockerfile("gpu-compute-sample-it", true).withDockerfile(DOCKERFILE)
			.withBuildArg("BASE_IMAGE", base);
		app = sampleContainer("app");
		app.start();
		http = new Http("http://" + app.getHost() + ":" + app.getMappedPort(8080));
	}

	@BeforeEach
	void skipWithoutDocker() {
		Assumptions.assumeTrue(unavailable == null, () -> "Container test skipped: " + unavailable);
	}

	@AfterAll
	static void stopIt() {
		if (app != null) {
			app.stop();
		}
	}

	private static GenericContainer<?> sampleContainer(String name) {
		GenericContainer<?> container = new GenericContainer<>(image).withExposedPorts(8080)
			.withLogConsumer(new Slf4jLogConsumer(LoggerFactory.getLogger("sample-app-container-" + name)))
			.waitingFor(Wait.forHttp("/actuator/health").forStatusCode(200).withStartupTimeout(Duration.ofMinutes(3)));
		if (GPU) {
			// What `docker run --gpus all` asks for; the toolkit mounts the driver for these capabilities.
			container.withEnv("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")
				.withCommand("--gpu.backend=cuda")
				.withCreateContainerCmdModifier((cmd) -> cmd.getHostConfig()
					.withDeviceRequests(List.of(new DeviceRequest().withCount(-1)
						.withCapabilities(List.of(List.of("gpu", "compute", "utility"))))));
		}
		return container;
	}

	@Test
	void healthAnswersUpWithTheGpuContributor() {
		Http.Response response = http.get("/actuator/health");
		assertThat(response.status()).isEqualTo(200);
		JsonNode health = response.json();
		assertThat(health.get("status").asString()).isEqualTo("UP");
		assertThat(health.at("/components/gpu/status").asString()).isEqualTo("UP");
		assertThat(health.at("/components/gpu/details/backend").asString()).isEqualTo(BACKEND);
	}

	@Test
	void readmeRoundTripGivesTheReadmesAnswer() {
		// The three requests of the README's quick start, byte for byte.
		Http.Response created = http.putJson("/collections/docs", "{\"dimension\": 4, \"metric\": \"cosine\"}");
		assertThat(created.status()).as(created.body()).isIn(200, 201);
		Http.Response added = http.postJson("/collections/docs/vectors", "{\"ids\": [\"apple\", \"banana\", \"cherry\"], "
				+ "\"vectors\": [[0.9, 0.1, 0.0, 0.2], [0.1, 0.8, 0.3, 0.0], [0.7, 0.2, 0.1, 0.6]]}");
		assertThat(added.status()).as(added.body()).isEqualTo(200);
		Http.Response found = http.postJson("/collections/docs/search", "{\"vectors\": [[0.8, 0.2, 0.1, 0.3]], \"k\": 2}");
		assertThat(found.status()).as(found.body()).isEqualTo(200);
		Http.Hits hits = Http.Hits.of(found.json()).get(0);
		// The README shows {"results":[[{"id":"apple","score":0.97677255},{"id":"cherry","score":0.94288456}]]}
		assertThat(hits.ids()).containsExactly("apple", "cherry");
		assertThat(hits.scores()[0]).isCloseTo(0.97677255f, org.assertj.core.data.Offset.offset(1e-6f));
		assertThat(hits.scores()[1]).isCloseTo(0.94288456f, org.assertj.core.data.Offset.offset(1e-6f));
		// ... and that answer is right: cosine similarity computed here, in double precision.
		float[][] vectors = { { 0.9f, 0.1f, 0.0f, 0.2f }, { 0.1f, 0.8f, 0.3f, 0.0f }, { 0.7f, 0.2f, 0.1f, 0.6f } };
		BruteForce.assertSameResults(hits.ids(), hits.scores(), BruteForce.ranking(List.of("apple", "banana", "cherry"),
				vectors, new float[] { 0.8f, 0.2f, 0.1f, 0.3f }, true), 2, "README search");
	}

	@Test
	void gpuEndpointShowsTheBackend() {
		JsonNode backend = http.get("/actuator/gpu/backend").json();
		assertThat(backend.get("backend").asString()).isEqualTo(BACKEND);
		assertThat(backend.get("healthy").asBoolean()).isTrue();
		if (!GPU) {
			// gpu.backend=auto in a container without GPUs: the fallback and its reason
			assertThat(backend.get("reason").asString()).contains("auto").contains("CPU");
		}
		JsonNode kernels = http.get("/actuator/gpu/kernels").json();
		assertThat(kernels.has("knn_fused") && kernels.has("knn_score")).as(kernels.toString()).isTrue();
	}

	@Test
	void infoShowsTheRuntimeVersion() {
		JsonNode info = http.get("/actuator/info").json();
		assertThat(info.at("/gpu/backend").asString()).isEqualTo(BACKEND);
		assertThat(info.at("/gpu/runtimeVersion").asString()).isEqualTo(System.getProperty("sample.version"));
	}

	/**
	 * {@code docker stop} while clients keep searching. A request counts as accepted when its
	 * bytes were on an established connection before the stop was issued: the service must answer
	 * every one of those (200 with the right results, or 503 from a server that had stopped taking
	 * work), and every response it gives after the stop must be right too; requests sent after the
	 * stop may also find the port closed. The container must exit on its own (143, SIGTERM), not be
	 * killed at the stop timeout, and log the GPU drain.
	 */
	@Test
	void stopUnderLoadAnswersEveryAcceptedRequest() throws Exception {
		GenericContainer<?> loaded = sampleContainer("stop");
		loaded.start();
		try {
			LoadedCollection collection = LoadedCollection.create(
					new Http("http://" + loaded.getHost() + ":" + loaded.getMappedPort(8080)));
			URI search = URI.create("http://" + loaded.getHost() + ":" + loaded.getMappedPort(8080)
					+ "/collections/load/search");
			int clients = 6;
			List<Exchange> exchanges = Collections.synchronizedList(new ArrayList<>());
			AtomicInteger answered = new AtomicInteger();
			CountDownLatch warm = new CountDownLatch(clients);
			long[] stopIssued = { Long.MAX_VALUE };
			long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
			ExecutorService threads = Executors.newFixedThreadPool(clients);
			for (int c = 0; c < clients; c++) {
				int client = c;
				threads.execute(() -> {
					HttpClient httpClient = HttpClient.newBuilder()
						.version(HttpClient.Version.HTTP_1_1)
						.connectTimeout(Duration.ofSeconds(5))
						.build();
					for (int n = 0;; n++) {
						int batch = (client + n) % collection.batches();
						long sent = System.nanoTime();
						Exchange exchange;
						try {
							HttpResponse<String> response = httpClient.send(
									HttpRequest.newBuilder(search)
										.timeout(Duration.ofSeconds(90))
										.header("Content-Type", "application/json")
										.POST(HttpRequest.BodyPublishers.ofString(collection.request(batch)))
										.build(),
									HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
							exchange = new Exchange(sent, System.nanoTime(), response.statusCode(),
									collection.check(batch, response), null);
						}
						catch (IOException | InterruptedException ex) {
							exchange = new Exchange(sent, System.nanoTime(), 0, null, ex.toString());
						}
						exchanges.add(exchange);
						if (exchange.status() == 200 && exchange.wrong() == null) {
							answered.incrementAndGet();
						}
						if (n == 0) {
							warm.countDown();
						}
						if ((exchange.status() == 0 && sent > stopIssued[0]) || System.nanoTime() > deadline) {
							return; // the service has gone (or the test is over)
						}
					}
				});
			}
			assertThat(warm.await(2, TimeUnit.MINUTES)).as("every client got a first answer").isTrue();
			// Under load: let every client have answers in flight, then stop the container.
			Thread.sleep(1500);
			DockerClient docker = DockerClientFactory.instance().client();
			long stopStart = System.nanoTime();
			stopIssued[0] = stopStart;
			docker.stopContainerCmd(loaded.getContainerId()).withTimeout(60).exec();
			long stopMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopStart);
			threads.shutdown();
			assertThat(threads.awaitTermination(2, TimeUnit.MINUTES)).isTrue();

			InspectContainerResponse.ContainerState state = docker.inspectContainerCmd(loaded.getContainerId())
				.exec()
				.getState();
			String logs = loaded.getLogs();
			List<Exchange> all = List.copyOf(exchanges);
			List<Exchange> accepted = all.stream().filter((e) -> e.sent() < stopStart).toList();
			List<Exchange> inFlightAtStop = accepted.stream().filter((e) -> e.done() > stopStart).toList();
			List<Exchange> after = all.stream().filter((e) -> e.sent() >= stopStart).toList();
			logger.info("docker stop took {} ms; {} requests accepted before the stop ({} in flight at the stop: {}), "
					+ "{} sent after it: {}", stopMillis, accepted.size(), inFlightAtStop.size(),
					summary(inFlightAtStop), after.size(), summary(after));

			assertThat(accepted).as("requests sent before the stop").hasSizeGreaterThan(clients);
			assertThat(accepted).as("every accepted request is answered, and answered right").allSatisfy((e) -> {
				assertThat(e.failure()).as("connection failure").isNull();
				assertThat(e.status()).as("status").isIn(200, 503);
				assertThat(e.wrong()).as("wrong results").isNull();
			});
			assertThat(inFlightAtStop).as("requests in flight when the stop was issued").isNotEmpty();
			assertThat(inFlightAtStop).as("in-flight searches finished after the stop")
				.anySatisfy((e) -> assertThat(e.status()).isEqualTo(200));
			assertThat(after).as("after the stop: a right answer, a 503, or a closed port")
				.allSatisfy((e) -> assertThat(e.status()).isIn(0, 200, 503))
				.allSatisfy((e) -> assertThat(e.wrong()).isNull());
			assertThat(state.getExitCodeLong()).as("exit code (143: SIGTERM, 137: killed at the stop timeout)")
				.isEqualTo(143L);
			assertThat(state.getOOMKilled()).isFalse();
			assertThat(stopMillis).as("stopped before the stop timeout").isLessThan(60_000);
			assertThat(logs).contains("Drained GPU work of " + BACKEND + " device 0")
				.doesNotContain("did not finish within gpu.shutdown.drain-timeout")
				.contains("Closed GPU context");
		}
		finally {
			loaded.stop();
		}
	}

	private static String summary(List<Exchange> exchanges) {
		Map<String, Long> counts = new java.util.TreeMap<>();
		for (Exchange e : exchanges) {
			String key = (e.status() == 0) ? "no answer" : (e.wrong() != null) ? "wrong" : "HTTP " + e.status();
			counts.merge(key, 1L, Long::sum);
		}
		return counts.toString();
	}

	/** One request: when it was sent and done, the status (0: no answer) and what was wrong, if anything. */
	private record Exchange(long sent, long done, int status, String wrong, String failure) {
	}

	/**
	 * A collection large enough that searches take a while on the service, and a few query batches
	 * whose right answers are computed here once, so that every response can be checked.
	 */
	private record LoadedCollection(List<String> requests, List<List<List<BruteForce.Expected>>> rankings) {

		static final int SIZE = 20_000;

		static final int DIMENSION = 128;

		static final int QUERIES = 32;

		static final int K = 10;

		static LoadedCollection create(Http service) {
			Random random = new Random(13);
			float[][] vectors = BruteForce.randomVectors(random, SIZE, DIMENSION);
			List<String> ids = IntStream.range(0, SIZE).mapToObj((i) -> "v" + i).toList();
			assertThat(service.putJson("/collections/load", "{\"dimension\": " + DIMENSION + ", \"metric\": \"cosine\"}")
				.status()).isIn(200, 201);
			Http.Response added = service.post("/collections/load/vectors?idPrefix=v", "application/octet-stream",
					Http.littleEndian(vectors));
			assertThat(added.status()).as(added.body()).isEqualTo(200);
			List<String> requests = new ArrayList<>();
			List<List<List<BruteForce.Expected>>> rankings = new ArrayList<>();
			for (int b = 0; b < 4; b++) {
				float[][] queries = BruteForce.randomVectors(random, QUERIES, DIMENSION);
				requests.add(Http.JSON.writeValueAsString(Map.of("vectors", queries, "k", K)));
				List<List<BruteForce.Expected>> batch = new ArrayList<>();
				for (float[] query : queries) {
					batch.add(BruteForce.ranking(ids, vectors, query, true).subList(0, 4 * K));
				}
				rankings.add(batch);
			}
			return new LoadedCollection(requests, rankings);
		}

		int batches() {
			return this.requests.size();
		}

		String request(int batch) {
			return this.requests.get(batch);
		}

		/** What is wrong with a 200 response to {@code batch}, or {@code null} (also for other statuses). */
		String check(int batch, HttpResponse<String> response) {
			if (response.statusCode() != 200) {
				return (response.statusCode() == 503) ? null : "HTTP " + response.statusCode() + ": " + response.body();
			}
			try {
				List<Http.Hits> hits = Http.Hits.of(Http.JSON.readTree(response.body()));
				assertThat(hits).hasSize(QUERIES);
				for (int q = 0; q < QUERIES; q++) {
					BruteForce.assertSameResults(hits.get(q).ids(), hits.get(q).scores(), this.rankings.get(batch).get(q),
							K, "batch " + batch + " query " + q);
				}
				return null;
			}
			catch (AssertionError | RuntimeException ex) {
				return ex.getMessage();
			}
		}

	}

}
