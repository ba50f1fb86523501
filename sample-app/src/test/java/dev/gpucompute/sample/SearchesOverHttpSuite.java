package dev.gpucompute.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import org.springframework.boot.test.web.server.LocalServerPort;

/**
 * The sample service on one backend, over real HTTP: a collection of 4,000 vectors searched with
 * k = 1, 10, 100 (the fused path) and 1000 (the general one), every answer checked against a
 * brute-force ranking in double precision, for both metrics; the actuator names the backend, health
 * is UP and Prometheus has the GPU meters. {@link SampleAppCudaGpuTests} runs it on CUDA (a GPU machine
 * only) and {@link SampleAppCpuSearchTests} on the CPU backend in CI, so that the GPU test cannot drift
 * from the API, the actuator's JSON or the limits unnoticed. A subclass is a {@code @SpringBootTest}
 * with a data directory of its own ({@link #dataDirectory}).
 */
abstract class SearchesOverHttpSuite {

	@LocalServerPort
	int port;

	/** The backend the application must run on, as the actuator writes it ({@code CUDA}, {@code CPU}). */
	abstract String backend();

	/** A fresh temporary directory, deleted when the JVM exits. */
	static Path dataDirectory(String prefix) {
		try {
			Path dir = Files.createTempDirectory(prefix);
			Runtime.getRuntime().addShutdownHook(new Thread(() -> {
				try (var files = Files.walk(dir)) {
					files.sorted(java.util.Comparator.reverseOrder()).forEach((file) -> file.toFile().delete());
				}
				catch (IOException ex) {
					// A temporary directory; the OS cleans it up eventually.
				}
			}));
			return dir;
		}
		catch (IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@Test
	void searchesMatchBruteForce() {
		Http http = new Http("http://localhost:" + this.port);
		JsonNode gpu = http.get("/actuator/gpu").json();
		assertThat(gpu.get("backend").get("backend").asString()).as(gpu.toString()).isEqualTo(backend());
		int dimension = 64;
		int size = 4000;
		String prefix = backend().toLowerCase(java.util.Locale.ROOT) + "-";
		for (String metric : List.of("cosine", "dot")) {
			Random random = new Random(metric.hashCode());
			float[][] vectors = BruteForce.randomVectors(random, size, dimension);
			List<String> ids = IntStream.range(0, size).mapToObj((i) -> "v" + i).toList();
			String name = prefix + metric;
			assertThat(http.putJson("/collections/" + name, "{\"dimension\": " + dimension + ", \"metric\": \"" + metric + "\"}")
				.status()).isEqualTo(201);
			Http.Response added = http.postJson("/collections/" + name + "/vectors", Map.of("ids", ids, "vectors", vectors));
			assertThat(added.status()).as(added.body()).isEqualTo(200);
			float[][] queries = BruteForce.randomVectors(random, 16, dimension);
			for (int k : new int[] { 1, 10, 100, 1000 }) {
				Http.Response response = http.postJson("/collections/" + name + "/search", Map.of("vectors", queries, "k", k));
				assertThat(response.status()).as(response.body()).isEqualTo(200);
				List<Http.Hits> results = Http.Hits.of(response.json());
				assertThat(results).hasSize(queries.length);
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
		assertThat(http.get("/actuator/prometheus").body()).contains("gpu_memory_cached_bytes",
				"gpu_kernel_launches_total{", "backend=\"" + backend().toLowerCase(java.util.Locale.ROOT) + "\"");
	}

}
