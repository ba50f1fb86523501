package dev.gpucompute.sample;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.sample.search.BatchedSearches;
import dev.gpucompute.test.GpuCpuBackend;

/**
 * Searches under concurrency on a pool of one stream: the binary search joins the
 * batcher as the JSON search does, concurrent single-query requests share one batch and its kernel
 * launches, and a batch runs on the stream it leased instead of leasing a second one (which, with
 * {@code max-size: 1}, waited for itself until the acquire timeout and answered 503).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.streams.pool-size=1", "gpu.streams.max-size=1", "gpu.streams.acquire-timeout=3s",
				"gpu.batching.search.max-concurrent-batches=1", "gpu.cpu.threads=2", "sample.memory-budget=4MB" })
@GpuCpuBackend
// Closed after the class, before its data directory is deleted: a cached (paused) service would fold its
// logs into a directory that no longer exists, and log that as an error.
@DirtiesContext
class SearchBatchingAppTests {

	private static final String OCTETS = "application/octet-stream";

	private static final int DIMENSION = 8;

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

	@Autowired
	BatchedSearches searches;

	@Autowired
	MeterRegistry meters;

	private Http http;

	private final Random random = new Random(34);

	@BeforeEach
	void collection() {
		this.http = new Http("http://localhost:" + this.port);
		this.http.deleteAllCollections();
		float[][] vectors = BruteForce.randomVectors(this.random, 200, DIMENSION);
		List<String> ids = IntStream.range(0, 200).mapToObj((i) -> "v" + i).toList();
		assertThat(this.http.putJson("/collections/b", "{\"dimension\": 8, \"metric\": \"cosine\"}").status())
			.isEqualTo(201);
		assertThat(this.http.postJson("/collections/b/vectors", Map.of("ids", ids, "vectors", vectors)).status())
			.isEqualTo(200);
	}

	@Test
	void aPoolOfOneStreamAnswersJsonAndBinarySearchesThroughTheBatcher() {
		float[][] query = BruteForce.randomVectors(this.random, 1, DIMENSION);
		BatcherStats before = this.searches.batcher().stats();
		PoolStats poolBefore = this.context.streams().stats();
		Http.Response json = this.http.postJson("/collections/b/search", Map.of("vectors", query, "k", 5));
		assertThat(json.status()).as(json.body()).isEqualTo(200);
		Http.Response binary = this.http.post("/collections/b/search?k=5", OCTETS, Http.littleEndian(query));
		assertThat(binary.status()).as(binary.body()).isEqualTo(200);
		assertThat(binary.body()).isEqualTo(json.body());
		BatcherStats after = this.searches.batcher().stats();
		PoolStats poolAfter = this.context.streams().stats();
		assertThat(after.dispatched() - before.dispatched()).as("searches the batcher ran").isEqualTo(2);
		assertThat(after.batches() - before.batches()).as("batches").isEqualTo(2);
		// Each batch leased the one stream once and searched on it: a second lease from inside the batch would
		// have waited for the batch's own stream until the acquire timeout.
		assertThat(poolAfter.acquisitions() - poolBefore.acquisitions()).as("leases: one per batch").isEqualTo(2);
		assertThat(poolAfter.timeouts() - poolBefore.timeouts()).as("leases that timed out").isZero();
		assertThat(poolAfter.highWaterMark()).as("streams ever leased at once").isEqualTo(1);
	}

	@Test
	void concurrentSingleQueryBinarySearchesShareOneBatchAndItsKernelLaunches() throws Exception {
		float[][] query = BruteForce.randomVectors(this.random, 1, DIMENSION);
		byte[] body = Http.littleEndian(query);
		Http.Response alone = this.http.post("/collections/b/search?k=5", OCTETS, body);
		assertThat(alone.status()).isEqualTo(200);
		BatcherStats before = this.searches.batcher().stats();
		double fusedBefore = fusedLaunches();
		int requests = 6;
		List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
		HttpClient client = HttpClient.newHttpClient();
		// While the test holds the pool's one stream, the first request runs its batch of one inline and waits
		// for a stream; the others queue behind it and leave as one batch.
		try (StreamLease held = this.context.streams().acquire()) {
			for (int i = 0; i < requests; i++) {
				answers.add(client.sendAsync(HttpRequest.newBuilder(URI.create(this.http.base() + "/collections/b/search?k=5"))
					.header("Content-Type", OCTETS)
					.POST(HttpRequest.BodyPublishers.ofByteArray(body))
					.timeout(Duration.ofSeconds(60))
					.build(), HttpResponse.BodyHandlers.ofString()));
			}
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
			while (this.searches.batcher().stats().runningBatches() + this.searches.batcher().queued() < requests
					&& System.nanoTime() < deadline) {
				Thread.sleep(1);
			}
			assertThat(this.searches.batcher().queued()).as("binary searches waiting in the batcher").isEqualTo(requests - 1);
		}
		for (CompletableFuture<HttpResponse<String>> answer : answers) {
			HttpResponse<String> response = answer.get(60, TimeUnit.SECONDS);
			assertThat(response.statusCode()).isEqualTo(200);
			assertThat(response.body()).as("the same answer as alone").isEqualTo(alone.body());
		}
		BatcherStats after = this.searches.batcher().stats();
		assertThat(after.dispatched() - before.dispatched()).isEqualTo(requests);
		assertThat(after.batches() - before.batches()).as("batches: the inline one and one of the rest").isEqualTo(2);
		assertThat(fusedLaunches() - fusedBefore).as("knn_fused launches for %d requests", requests).isEqualTo(2);
	}

	private double fusedLaunches() {
		return this.meters.find("gpu.kernel.launches").tag("kernel", "knn_fused").functionCounters().stream()
			.mapToDouble(FunctionCounter::count).sum();
	}

}
