package dev.gpucompute.sample;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.beans.factory.annotation.Autowired;

import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.sample.search.BatchedSearches;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Load from a second process over loopback: {@link LoadClient} runs in its own JVM with many
 * concurrent clients, bounded in requests and time, and checks every response against a
 * brute-force reference. Meanwhile this test watches the stream pool: it must stay within its
 * bounds, never time out a lease, and be idle again afterwards.
 */
class LoadTests extends RunningAppFixture {

	private static final int CLIENTS = 16;

	private static final int REQUESTS = 400;

	@TempDir
	Path work;

	@Autowired
	BatchedSearches searches;

	@Test
	void concurrentClientsInAnotherProcessAllGetCorrectResults() throws Exception {
		int size = 2000;
		int dimension = 32;
		Random random = new Random(99);
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "item-" + i).toList();
		assertThat(this.http.putJson("/collections/load", "{\"dimension\": 32, \"metric\": \"cosine\"}").status())
			.isEqualTo(201);
		assertThat(this.http.post("/collections/load/vectors?idPrefix=item-", "application/octet-stream",
				Http.littleEndian(vectors)).status()).isEqualTo(200);
		Path dataset = this.work.resolve("dataset.bin");
		LoadClient.Dataset.write(dataset, ids, vectors, true);
		PoolStats before = this.context.streams().stats();
		BatcherStats batchesBefore = this.searches.batcher().stats();

		AtomicBoolean sampling = new AtomicBoolean(true);
		AtomicInteger maxActive = new AtomicInteger();
		AtomicInteger maxSize = new AtomicInteger();
		Thread sampler = new Thread(() -> {
			while (sampling.get()) {
				PoolStats stats = this.context.streams().stats();
				maxActive.accumulateAndGet(stats.active(), Math::max);
				maxSize.accumulateAndGet(stats.size(), Math::max);
				try {
					Thread.sleep(5);
				}
				catch (InterruptedException ex) {
					return;
				}
			}
		}, "pool-sampler");
		sampler.start();

		Path output = this.work.resolve("client.log");
		Process client = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx256m",
				"-cp", System.getProperty("java.class.path"), LoadClient.class.getName(), "http://127.0.0.1:" + this.port,
				"load", dataset.toString(), Integer.toString(CLIENTS), Integer.toString(REQUESTS), "7", "90")
			.redirectErrorStream(true)
			.redirectOutput(output.toFile())
			.start();
		boolean finished;
		try {
			finished = client.waitFor(150, TimeUnit.SECONDS);
		}
		finally {
			if (client.isAlive()) {
				client.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
			}
			sampling.set(false);
			sampler.join();
		}
		String log = Files.readString(output, StandardCharsets.UTF_8);
		assertThat(finished).as("client finished in time; output:%n%s", log).isTrue();
		assertThat(client.exitValue()).as("client exit code; output:%n%s", log).isZero();
		assertThat(log).contains("requests=" + REQUESTS + " ok=" + REQUESTS + " mismatches=0 errors=0");

		PoolStats after = this.context.streams().stats();
		int poolMax = after.maxSize();
		assertThat(maxActive.get()).as("most leased streams seen").isBetween(1, poolMax);
		assertThat(maxSize.get()).as("most streams seen").isLessThanOrEqualTo(poolMax);
		assertThat(after.highWaterMark()).isLessThanOrEqualTo(poolMax);
		assertThat(after.timeouts()).as("lease timeouts").isEqualTo(before.timeouts());
		// Every search leased: a batch one stream for all of its requests, a request searched alone (too
		// large for a batch) at least one of its own.
		BatcherStats batchesAfter = this.searches.batcher().stats();
		long batches = batchesAfter.batches() - batchesBefore.batches();
		long alone = REQUESTS - (batchesAfter.dispatched() - batchesBefore.dispatched());
		assertThat(batches).as("batches").isPositive();
		assertThat(after.acquisitions() - before.acquisitions()).as("leases taken").isGreaterThanOrEqualTo(batches + alone);
		awaitIdle();
	}

}
