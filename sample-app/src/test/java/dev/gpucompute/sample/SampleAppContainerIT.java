package dev.gpucompute.sample;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;

import com.github.dockerjava.api.model.DeviceRequest;
import com.github.dockerjava.api.model.Info;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.output.Slf4jLogConsumer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.images.builder.ImageFromDockerfile;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The packaged application in a CUDA base image with every GPU of the Docker host requested: it
 * must pick the CUDA backend, compile the kernels with NVRTC, answer searches like the brute-force
 * reference, and show the launches in Actuator and Prometheus.
 *
 * <p>Runs in the integration-test phase ({@code mvn verify}), after the jar is packaged, and only
 * where Docker runs with the NVIDIA container runtime; everywhere else it is skipped (Testcontainers'
 * {@code disabledWithoutDocker}, then a condition on the runtime and on the packaged jar).
 */
@Testcontainers(disabledWithoutDocker = true)
@EnabledIf("nvidiaDockerAndPackagedJar")
class SampleAppContainerIT {

	/** The CUDA 12.6 runtime image: the driver API comes from the host, NVRTC 12 from the image (JCuda 12.6 needs it). */
	private static final String BASE_IMAGE = "nvidia/cuda:12.6.3-runtime-ubuntu24.04";

	private static final Path JAR = Path.of(System.getProperty("sample.jar", "target/gpu-compute-sample-app.jar"));

	@Container
	static final GenericContainer<?> app = new GenericContainer<>(new ImageFromDockerfile("gpu-compute-sample-it", true)
		.withFileFromPath("app.jar", JAR)
		.withDockerfileFromBuilder((dockerfile) -> dockerfile.from(BASE_IMAGE)
			.run("apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless "
					+ "&& rm -rf /var/lib/apt/lists/*")
			.copy("app.jar", "/app/app.jar")
			.expose(8080)
			.entryPoint("java", "-jar", "/app/app.jar", "--gpu.backend=cuda", "--sample.data-dir=/tmp/data")
			.build()))
		.withExposedPorts(8080)
		.withCreateContainerCmdModifier((cmd) -> cmd.getHostConfig()
			.withDeviceRequests(List.of(new DeviceRequest().withDriver("nvidia")
				.withCount(-1)
				.withCapabilities(List.of(List.of("gpu", "compute", "utility"))))))
		.withLogConsumer(new Slf4jLogConsumer(org.slf4j.LoggerFactory.getLogger("sample-app-container")))
		.waitingFor(Wait.forHttp("/actuator/health").forStatusCode(200).withStartupTimeout(Duration.ofMinutes(5)));

	static boolean nvidiaDockerAndPackagedJar() {
		if (!Files.isRegularFile(JAR) || !DockerClientFactory.instance().isDockerAvailable()) {
			return false;
		}
		Info info = DockerClientFactory.instance().client().infoCmd().exec();
		return info.getRuntimes() != null && info.getRuntimes().containsKey("nvidia");
	}

	@Test
	void searchesOnTheGpuLikeTheReferenceAndReportsTheLaunches() {
		Http http = new Http("http://" + app.getHost() + ":" + app.getMappedPort(8080));
		JsonNode gpu = http.get("/actuator/gpu").json();
		assertThat(gpu.get("backend").get("backend").asString()).isEqualTo("CUDA");

		int size = 5000;
		int dimension = 96;
		Random random = new Random(2024);
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "v" + i).toList();
		assertThat(http.putJson("/collections/gpu", "{\"dimension\": 96, \"metric\": \"cosine\"}").status()).isEqualTo(201);
		assertThat(http.post("/collections/gpu/vectors?idPrefix=v", "application/octet-stream",
				Http.littleEndian(vectors)).status()).isEqualTo(200);
		float[][] queries = BruteForce.randomVectors(random, 12, dimension);
		// k = 10 takes the chunked top-k kernel, k = 2000 the whole-row bitonic sort.
		for (int k : new int[] { 10, 2000 }) {
			Http.Response response = http.postJson("/collections/gpu/search", Map.of("vectors", queries, "k", k));
			assertThat(response.status()).as(response.body()).isEqualTo(200);
			List<Http.Hits> results = Http.Hits.of(response.json());
			for (int q = 0; q < queries.length; q++) {
				BruteForce.assertSameResults(results.get(q).ids(), results.get(q).scores(),
						BruteForce.ranking(ids, vectors, queries[q], true), k, "CUDA k=" + k + " query " + q);
			}
		}

		String prometheus = http.get("/actuator/prometheus").body();
		for (String kernel : new String[] { "knn_scatter", "knn_score", "knn_topk", "knn_sort_init", "knn_bitonic_step" }) {
			assertThat(prometheus).containsPattern("gpu_kernel_launches_total\\{[^}]*kernel=\"" + kernel
					+ "\"[^}]*outcome=\"success\"[^}]*\\} [1-9]");
		}
		assertThat(prometheus).containsPattern("gpu_kernel_launches_total\\{[^}]*outcome=\"error\"[^}]*\\} 0");
		assertThat(http.get("/actuator/health").json().get("status").asString()).isEqualTo("UP");
	}

}
