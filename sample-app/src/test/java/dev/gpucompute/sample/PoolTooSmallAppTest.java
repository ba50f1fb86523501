package dev.gpucompute.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import dev.gpucompute.GpuContext;
import dev.gpucompute.test.GpuCpuBackend;

/**
 * A service whose stream pool is too small for its search parallelism: a normal-priority limit of
 * one stream, while an unbatched search of several queries splits into four stream-parallel groups. The group can never be leased, so the search is a 500 problem detail that names the setting
 * (not an internal error, not a 503 asking to retry), nothing stays leased, and a search that needs
 * one stream still works.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.streams.pool-size=1", "gpu.streams.max-size=4", "gpu.streams.priority-limits.normal=1",
				"gpu.cpu.threads=2", "sample.memory-budget=4MB", "sample.search.parallelism=4",
				"sample.search.min-queries-per-group=1", "sample.search.batching.enabled=false" })
@GpuCpuBackend
class PoolTooSmallAppTest {

	private static final Path DATA = temporaryDirectory();

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", DATA::toString);
	}

	@AfterAll
	static void deleteData() throws Exception {
		try (var files = Files.walk(DATA)) {
			files.sorted(java.util.Comparator.reverseOrder()).forEach((file) -> file.toFile().delete());
		}
	}

	private static Path temporaryDirectory() {
		try {
			return Files.createTempDirectory("sample-pool-too-small-");
		}
		catch (java.io.IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

	@LocalServerPort
	int port;

	@Autowired
	GpuContext context;

	@Test
	void aSearchNeedingMoreStreamsThanThePoolLeasesIsA500NamingTheSetting() {
		Http http = new Http("http://localhost:" + this.port);
		http.putJson("/collections/small", "{\"dimension\": 4, \"metric\": \"dot\"}");
		float[][] rows = BruteForce.randomVectors(new Random(3), 20, 4);
		assertThat(http.post("/collections/small/vectors?idPrefix=v", "application/octet-stream", Http.littleEndian(rows))
			.status()).isEqualTo(200);

		// Twelve queries in four groups (the parallelism) of three, searched from the request thread (not
		// batched): four NORMAL streams at once, with a limit of one.
		float[][] queries = BruteForce.randomVectors(new Random(4), 12, 4);
		Http.Response response = http.post("/collections/small/search?k=3", "application/octet-stream",
				Http.littleEndian(queries));
		assertThat(response.status()).as(response.body()).isEqualTo(500);
		assertThat(response.contentType()).startsWith("application/problem+json");
		assertThat(response.header("Retry-After")).isNull();
		JsonNode problem = response.json();
		assertThat(problem.get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:pool-too-small");
		assertThat(problem.get("title").asString()).isEqualTo("GPU stream pool too small");
		assertThat(problem.get("detail").asString()).isEqualTo("The search needs 4 GPU streams at once, but the "
				+ "service's stream pool leases at most 1 at once (gpu.streams.priority-limits.normal); the service's "
				+ "configuration must change");
		assertThat(problem.get("setting").asString()).isEqualTo("gpu.streams.priority-limits.normal");
		assertThat(this.context.streams().stats().active()).as("leased streams after the refusal").isZero();

		// One query needs one stream: still answered.
		Http.Response one = http.post("/collections/small/search?k=3", "application/octet-stream",
				Http.littleEndian(new float[][] { queries[0] }));
		assertThat(one.status()).as(one.body()).isEqualTo(200);
	}

}
