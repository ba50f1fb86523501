package dev.gpucompute.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import dev.gpucompute.GpuContext;
import dev.gpucompute.test.GpuCpuBackend;

/**
 * A service whose stream pool leases fewer streams at its search's priority than its search
 * parallelism asks for: a normal-priority limit of one stream, while an unbatched search of several
 * queries would split into four stream-parallel groups. The search caps its groups at what the pool
 * can lease at once, so it is answered (a group of four could never be leased: it failed with a 500
 * {@code pool-too-small} problem before the cap), and nothing stays leased. The mapping of
 * {@code PoolTooSmallException} to its problem detail is the starter's, tested there.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.streams.pool-size=1", "gpu.streams.max-size=4", "gpu.streams.priority-limits.normal=1",
				"gpu.cpu.threads=2", "sample.memory-budget=4MB", "sample.search.parallelism=4",
				"sample.search.min-queries-per-group=1", "sample.search.batching.enabled=false" })
@GpuCpuBackend
// Closed after the class, before its data directory is deleted: a cached (paused) service would fold its
// logs into a directory that no longer exists, and log that as an error.
@DirtiesContext
class SearchWithinPoolLimitsAppTests {

	/** Deleted after the class, once {@code @DirtiesContext} has closed the service that writes to it. */
	@TempDir
	static Path data;

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", () -> data.toString());
	}


	@LocalServerPort
	int port;

	@Autowired
	GpuContext context;

	@Test
	void aSearchOfSeveralQueriesUsesNoMoreStreamsThanThePriorityLimitLeases() {
		Http http = new Http("http://localhost:" + this.port);
		http.putJson("/collections/small", "{\"dimension\": 4, \"metric\": \"dot\"}");
		float[][] rows = BruteForce.randomVectors(new Random(3), 20, 4);
		assertThat(http.post("/collections/small/vectors?idPrefix=v", "application/octet-stream", Http.littleEndian(rows))
			.status()).isEqualTo(200);

		// Twelve queries, which the parallelism would split into four groups of three, searched from the
		// request thread (not batched) with a NORMAL limit of one stream: one group.
		float[][] queries = BruteForce.randomVectors(new Random(4), 12, 4);
		Http.Response response = http.post("/collections/small/search?k=3", "application/octet-stream",
				Http.littleEndian(queries));
		assertThat(response.status()).as(response.body()).isEqualTo(200);
		JsonNode results = response.json().get("results");
		assertThat(results).hasSize(12);
		for (JsonNode hits : results) {
			assertThat(hits).hasSize(3);
		}
		assertThat(this.context.streams().stats().highWaterMark()).as("streams leased at once").isEqualTo(1);
		assertThat(this.context.streams().stats().active()).as("leased streams after the search").isZero();
	}

}
