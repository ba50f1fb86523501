package dev.gpucompute.sample;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import dev.gpucompute.GpuDevices;
import dev.gpucompute.test.GpuCpuBackend;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The service on three CPU devices ({@code gpu.devices=all}, {@code gpu.cpu.devices=3}) with a budget
 * of 2,000 vectors of dimension 32 per device: collections are placed on the device with the most
 * free budget, one of 5,000 vectors is spread over all three, and its answers match brute force.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.devices=all", "gpu.cpu.devices=3", "gpu.cpu.threads=1", "gpu.streams.pool-size=2",
				"gpu.streams.max-size=8", "sample.memory-budget=256000B", "sample.limits.max-results=20000" })
@GpuCpuBackend
// Closed after the class, before its data directory is deleted: a cached (paused) service would fold its
// logs into a directory that no longer exists, and log that as an error.
@DirtiesContext
class MultiDeviceAppTests {

	@TempDir
	static Path data;

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", () -> data.toString());
	}

	@LocalServerPort
	int port;

	@Autowired
	GpuDevices devices;

	@Test
	void collectionsArePlacedAndShardedOverTheDevicesWithExactAnswers() throws IOException {
		assertThat(this.devices.size()).isEqualTo(3);
		Http http = new Http("http://localhost:" + this.port);
		int dimension = 32;
		Random random = new Random(11);
		http.putJson("/collections/small", "{\"dimension\": 32, \"metric\": \"dot\"}");
		http.post("/collections/small/vectors?idPrefix=s-", "application/octet-stream",
				Http.littleEndian(BruteForce.randomVectors(random, 500, dimension)));
		assertThat(devicesOf(http.get("/collections/small").json())).containsExactly(0);

		int size = 5000;
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "doc-" + i).toList();
		assertThat(http.putJson("/collections/big", "{\"dimension\": 32, \"metric\": \"cosine\"}").status()).isEqualTo(201);
		for (int from = 0; from < size; from += 1000) {
			float[][] part = java.util.Arrays.copyOfRange(vectors, from, from + 1000);
			Http.Response written = http.post("/collections/big/vectors?idPrefix=doc-&idStart=" + from,
					"application/octet-stream", Http.littleEndian(part));
			assertThat(written.status()).as(written.body()).isEqualTo(200);
		}
		JsonNode big = http.get("/collections/big").json();
		assertThat(big.get("size").asInt()).isEqualTo(size);
		// The first shard went to the device with the most free budget (not 0, which holds "small").
		assertThat(devicesOf(big)).hasSizeGreaterThanOrEqualTo(3).contains(0, 1, 2).first().isNotEqualTo(0);
		int placed = 0;
		for (JsonNode shard : big.get("devices")) {
			placed += shard.get("vectors").asInt();
		}
		assertThat(placed).isEqualTo(size);

		float[][] queries = BruteForce.randomVectors(random, 8, dimension);
		for (int k : new int[] { 1, 10, 2500 }) {
			Http.Response response = http.postJson("/collections/big/search", Map.of("vectors", queries, "k", k));
			assertThat(response.status()).as(response.body()).isEqualTo(200);
			List<Http.Hits> results = Http.Hits.of(response.json());
			for (int q = 0; q < queries.length; q++) {
				BruteForce.assertSameResults(results.get(q).ids(), results.get(q).scores(),
						BruteForce.ranking(ids, vectors, queries[q], true), k, "k=" + k + " query " + q);
			}
		}
		// Past every device's budget: refused, nothing changed.
		Http.Response tooMuch = http.post("/collections/big/vectors?idPrefix=extra-", "application/octet-stream",
				Http.littleEndian(BruteForce.randomVectors(random, 2000, dimension)));
		assertThat(tooMuch.status()).as(tooMuch.body()).isEqualTo(422);
		assertThat(http.get("/collections/big").json().get("size").asInt()).isEqualTo(size);
		assertThat(Files.exists(data.resolve("big.vec"))).isTrue();
	}

	private static List<Integer> devicesOf(JsonNode collection) {
		return java.util.stream.StreamSupport.stream(collection.get("devices").spliterator(), false)
			.map((shard) -> shard.get("device").asInt())
			.toList();
	}

}
