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
import dev.gpucompute.StreamLease;
import dev.gpucompute.sample.search.BatchedSearches;
import dev.gpucompute.test.GpuCpuBackend;

/**
 * Back-pressure over HTTP: when the search batcher's queue is full, a search is answered at once
 * with 503, a {@code Retry-After} header and a problem detail; the queued searches are still
 * answered once the device is free. The queue is filled deterministically: while the test holds
 * every pooled stream, the batcher's dispatcher waits for one and the searches stay queued.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.batching.search.max-queued=2", "gpu.streams.pool-size=2", "gpu.streams.max-size=4",
				"gpu.cpu.threads=2", "sample.memory-budget=4MB" })
@GpuCpuBackend
// Closed after the class, before its data directory is deleted: a cached (paused) service would fold its
// logs into a directory that no longer exists, and log that as an error.
@DirtiesContext
class SearchQueueFullTests {

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

	@Test
	void aFullQueueAnswers503WithRetryAfterAndTheQueuedSearchesAreStillAnswered() throws Exception {
		Http http = new Http("http://localhost:" + this.port);
		int dimension = 8;
		Random random = new Random(503);
		float[][] vectors = BruteForce.randomVectors(random, 100, dimension);
		List<String> ids = IntStream.range(0, 100).mapToObj((i) -> "v" + i).toList();
		assertThat(http.putJson("/collections/q", "{\"dimension\": 8, \"metric\": \"dot\"}").status()).isEqualTo(201);
		assertThat(http.postJson("/collections/q/vectors", Map.of("ids", ids, "vectors", vectors)).status())
			.isEqualTo(200);
		String search = Http.JSON.writeValueAsString(Map.of("vectors", BruteForce.randomVectors(random, 1, dimension),
				"k", 3));
		Http.Response alone = http.postJson("/collections/q/search", search);
		assertThat(alone.status()).isEqualTo(200);

		List<StreamLease> held = new ArrayList<>();
		for (int i = 0; i < this.context.streams().maxSize(); i++) {
			held.add(this.context.streams().acquire());
		}
		List<CompletableFuture<HttpResponse<String>>> queued = new ArrayList<>();
		HttpClient client = HttpClient.newHttpClient();
		try {
			// The first finds the batcher idle and waits for a stream on its own thread; two more queue.
			for (int i = 0; i < 3; i++) {
				queued.add(client.sendAsync(HttpRequest.newBuilder(URI.create(http.base() + "/collections/q/search"))
					.header("Content-Type", "application/json")
					.POST(HttpRequest.BodyPublishers.ofString(search))
					.timeout(Duration.ofSeconds(60))
					.build(), HttpResponse.BodyHandlers.ofString()));
				long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
				while (this.searches.batcher().stats().runningBatches() + this.searches.batcher().queued() < i + 1
						&& System.nanoTime() < deadline) {
					Thread.sleep(1);
				}
			}
			assertThat(this.searches.batcher().queued()).isEqualTo(2);
			HttpResponse<String> refused = client.send(HttpRequest.newBuilder(URI.create(http.base() + "/collections/q/search"))
				.header("Content-Type", "application/json")
				.POST(HttpRequest.BodyPublishers.ofString(search))
				.build(), HttpResponse.BodyHandlers.ofString());
			assertThat(refused.statusCode()).isEqualTo(503);
			assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
			long retryAfter = Long.parseLong(refused.headers().firstValue("Retry-After").orElseThrow());
			assertThat(retryAfter).isPositive();
			JsonNode problem = Http.JSON.readTree(refused.body());
			// The starter's answer, with the sample's retryAfterSeconds (see SampleGpuProblemsTests).
			assertThat(problem.get("type").asString()).isEqualTo("urn:gpu-compute:problem:batch-queue-full");
			assertThat(problem.get("status").asInt()).isEqualTo(503);
			assertThat(problem.get("title").asString()).isEqualTo("GPU busy");
			assertThat(problem.get("retryAfterSeconds").asLong()).isEqualTo(retryAfter);
			assertThat(problem.get("instance").asString()).isEqualTo("/collections/q/search");
			assertThat(problem.get("detail").asString()).isEqualTo("The GPU batch queue is full; retry later.");
		}
		finally {
			held.forEach(StreamLease::close);
		}
		for (CompletableFuture<HttpResponse<String>> response : queued) {
			HttpResponse<String> answered = response.get(60, TimeUnit.SECONDS);
			assertThat(answered.statusCode()).isEqualTo(200);
			assertThat(answered.body()).isEqualTo(alone.body());
		}
		assertThat(this.searches.batcher().stats().rejected()).isEqualTo(1);
	}

}
