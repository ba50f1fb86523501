package dev.gpucompute.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import tools.jackson.databind.JsonNode;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The sample service on a CUDA device ({@code gpu.backend=cuda}): a collection of 4,000 vectors
 * searched over real HTTP (k = 1, 10, 100 on the fused path, 1000 on the general one), every answer
 * checked against a brute-force ranking in double precision, for both metrics; the actuator reports
 * CUDA and health UP. Skipped without a device; failed when
 * {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(RequiresCuda.class)
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cuda", "gpu.streams.pool-size=4", "sample.limits.max-body-size=16MB" })
class SampleAppCudaGpuTest {

	private static final Path DATA = createDataDir();

	private static Path createDataDir() {
		try {
			return Files.createTempDirectory("sample-app-cuda-");
		}
		catch (IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", DATA::toString);
	}

	@AfterAll
	static void deleteData() throws IOException {
		try (var files = Files.walk(DATA)) {
			files.sorted(java.util.Comparator.reverseOrder()).forEach((file) -> file.toFile().delete());
		}
	}

	@LocalServerPort
	int port;

	@Test
	void searchesMatchBruteForceOnCuda() {
		Http http = new Http("http://localhost:" + this.port);
		JsonNode gpu = http.get("/actuator/gpu").json();
		assertThat(gpu.toString()).contains("\"CUDA\"");
		int dimension = 64;
		int size = 4000;
		for (String metric : List.of("cosine", "dot")) {
			Random random = new Random(metric.hashCode());
			float[][] vectors = BruteForce.randomVectors(random, size, dimension);
			List<String> ids = IntStream.range(0, size).mapToObj((i) -> "v" + i).toList();
			String name = "cuda-" + metric;
			assertThat(http.putJson("/collections/" + name, "{\"dimension\": " + dimension + ", \"metric\": \"" + metric + "\"}")
				.status()).isEqualTo(201);
			Http.Response added = http.postJson("/collections/" + name + "/vectors", Map.of("ids", ids, "vectors", vectors));
			assertThat(added.status()).as(added.body()).isEqualTo(200);
			float[][] queries = BruteForce.randomVectors(random, 16, dimension);
			for (int k : new int[] { 1, 10, 100, 1000 }) {
				Http.Response response = http.postJson("/collections/" + name + "/search", Map.of("vectors", queries, "k", k));
				assertThat(response.status()).as(response.body()).isEqualTo(200);
				List<Http.Hits> results = Http.Hits.of(response.json());
				for (int q = 0; q < queries.length; q++) {
					BruteForce.assertSameResults(results.get(q).ids(), results.get(q).scores(),
							BruteForce.ranking(ids, vectors, queries[q], metric.equals("cosine")), k,
							metric + " k=" + k + " query " + q);
				}
			}
			assertThat(http.delete("/collections/" + name).status()).isEqualTo(204);
		}
		JsonNode health = http.get("/actuator/health").json();
		assertThat(health.get("components").get("gpu").get("status").asString()).isEqualTo("UP");
		assertThat(http.get("/actuator/prometheus").body()).contains("gpu_memory_cached_bytes");
	}

}
