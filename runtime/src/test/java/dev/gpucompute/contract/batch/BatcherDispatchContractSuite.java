package dev.gpucompute.contract.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.gpucompute.batch.Batch;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;

/**
 * How the dynamic batcher forms and dispatches batches, on every backend (docs/runtime.md
 * "Batching", items 1 and 2): an item that finds the batcher idle goes at once, items accumulate
 * while batches run, one key per batch with the oldest key first, the delay and the callers that
 * come back, and {@code call} inline when idle. Batches run real kernels on their leased streams, so
 * the CUDA twin covers the CUDA path.
 */
public abstract class BatcherDispatchContractSuite extends BatcherContractFixture {

	// ---- continuous batching ------------------------------------------------------------------

	@Test
	void anItemArrivingWhenIdleIsDispatchedAtOnceWhateverTheDelay() throws Exception {
		// A delay of an hour would hold the item if it applied when nothing runs.
		try (GpuBatcher<Float, Float> batcher = batcher(doubling((b) -> {
		})).maxBatchSize(64).maxQueueDelay(Duration.ofHours(1)).maxConcurrentBatches(2).build()) {
			assertThat(get(batcher.submit(3f))).isEqualTo(6f);
			assertThat(get(batcher.submit(4f))).isEqualTo(8f);
			assertThat(this.seen).containsExactly(List.of(3f), List.of(4f));
			assertThat(batcher.stats().batches()).isEqualTo(2);
		}
		assertPoolFull();
	}

	@Test
	void itemsAccumulateWhileABatchRunsAndGoTogetherWhenItEnds() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		try (GpuBatcher<Float, Float> batcher = batcher(doubling(holdFirst(started, release))).maxBatchSize(10)
			.build()) {
			List<CompletableFuture<Float>> futures = new ArrayList<>();
			futures.add(batcher.submit(0f));
			await(started);
			for (int i = 1; i <= 25; i++) {
				futures.add(batcher.submit((float) i));
			}
			assertThat(batcher.stats().queued()).isEqualTo(25);
			release.countDown();
			for (int i = 0; i < futures.size(); i++) {
				assertThat(get(futures.get(i))).isEqualTo(2f * i);
			}
			assertThat(this.seen).extracting(List::size).containsExactly(1, 10, 10, 5);
			assertThat(this.seen.get(1)).containsExactly(1f, 2f, 3f, 4f, 5f, 6f, 7f, 8f, 9f, 10f);
			// Figures are booked once a batch has finished, after its futures: read them after close.
			batcher.close();
			BatcherStats stats = batcher.stats();
			assertThat(stats.batches()).isEqualTo(4);
			assertThat(stats.dispatched()).isEqualTo(26);
			assertThat(stats.succeeded()).isEqualTo(26);
			assertThat(stats.meanBatchSize()).isEqualTo(6.5);
		}
		assertPoolFull();
	}

	@Test
	void batchesHoldOneKeyEachAndTheOldestKeyGoesFirst() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		// Key: the sign of the item.
		try (GpuBatcher<Float, Float> batcher = batcher(doubling(holdFirst(started, release)))
			.batchKey((item) -> item < 0 ? "negative" : "positive")
			.build()) {
			List<CompletableFuture<Float>> futures = new ArrayList<>();
			futures.add(batcher.submit(100f));
			await(started);
			float[] items = { -1, 1, -2, 2, -3, 3 };
			for (float item : items) {
				futures.add(batcher.submit(item));
			}
			release.countDown();
			for (CompletableFuture<Float> future : futures) {
				get(future);
			}
			assertThat(this.seen).containsExactly(List.of(100f), List.of(-1f, -2f, -3f), List.of(1f, 2f, 3f));
		}
	}

	@Test
	void whileABatchRunsAFreeDispatcherWaitsForAFullBatchOrTheDelay() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		try (GpuBatcher<Float, Float> full = batcher(doubling(holdFirst(started, release))).maxBatchSize(3)
			.maxQueueDelay(Duration.ofHours(1))
			.maxConcurrentBatches(2)
			.build()) {
			CompletableFuture<Float> first = full.submit(1f);
			await(started);
			List<CompletableFuture<Float>> three = List.of(full.submit(2f), full.submit(3f), full.submit(4f));
			// The second dispatcher ran these three as one full batch while the first batch still runs.
			for (CompletableFuture<Float> future : three) {
				get(future);
			}
			assertThat(first).isNotDone();
			assertThat(this.seen).containsExactly(List.of(1f), List.of(2f, 3f, 4f));
			release.countDown();
			assertThat(get(first)).isEqualTo(2f);
		}
		this.seen.clear();
		CountDownLatch started2 = new CountDownLatch(1);
		CountDownLatch release2 = new CountDownLatch(1);
		try (GpuBatcher<Float, Float> delayed = batcher(doubling(holdFirst(started2, release2))).maxBatchSize(64)
			.maxQueueDelay(Duration.ofMillis(20))
			.maxConcurrentBatches(2)
			.build()) {
			CompletableFuture<Float> first = delayed.submit(1f);
			await(started2);
			// Not a full batch: it goes once it has waited the delay, while the first batch still runs.
			assertThat(get(delayed.submit(2f))).isEqualTo(4f);
			assertThat(first).isNotDone();
			release2.countDown();
			get(first);
		}
		assertPoolFull();
	}

	@Test
	void afterABatchItsCallersCanComeBackWithinTheDelayAndJoinTheItemsThatWaited() throws Exception {
		// Batches 1 and 2 are held until the test lets each go.
		List<CountDownLatch> starts = List.of(new CountDownLatch(1), new CountDownLatch(1));
		List<CountDownLatch> releases = List.of(new CountDownLatch(1), new CountDownLatch(1));
		AtomicInteger calls = new AtomicInteger();
		Consumer<Batch<Float>> hold = (batch) -> {
			int call = calls.getAndIncrement();
			if (call < 2) {
				starts.get(call).countDown();
				await(releases.get(call));
			}
		};
		// One dispatcher, a delay of an hour: after a batch of n, the next goes once n items wait.
		try (GpuBatcher<Float, Float> batcher = batcher(doubling(hold)).maxBatchSize(8)
			.maxQueueDelay(Duration.ofHours(1))
			.build()) {
			// Found idle: at once, alone.
			CompletableFuture<Float> a = batcher.submit(0f);
			await(starts.get(0));
			List<CompletableFuture<Float>> b = List.of(batcher.submit(1f), batcher.submit(2f));
			releases.get(0).countDown();
			assertThat(get(a)).isEqualTo(0f);
			// The last batch had 1 item and 2 wait: they go together.
			await(starts.get(1));
			CompletableFuture<Float> straggler = batcher.submit(3f);
			releases.get(1).countDown();
			for (CompletableFuture<Float> future : b) {
				get(future);
			}
			// The last batch had 2: the straggler is held until a second item joins it, not run alone.
			CompletableFuture<Float> back = batcher.submit(4f);
			assertThat(get(straggler)).isEqualTo(6f);
			assertThat(get(back)).isEqualTo(8f);
			assertThat(this.seen).containsExactly(List.of(0f), List.of(1f, 2f), List.of(3f, 4f));
		}
		assertPoolFull();
	}

	@Test
	void callRunsOnTheCallersThreadWhenIdleAndWaitsInTheQueueOtherwise() throws Exception {
		List<String> threads = java.util.Collections.synchronizedList(new ArrayList<>());
		List<CountDownLatch> starts = List.of(new CountDownLatch(1), new CountDownLatch(1));
		List<CountDownLatch> releases = List.of(new CountDownLatch(1), new CountDownLatch(1));
		AtomicInteger calls = new AtomicInteger();
		Consumer<Batch<Float>> hold = (batch) -> {
			threads.add(Thread.currentThread().getName());
			int call = calls.getAndIncrement();
			if (call < 2) {
				starts.get(call).countDown();
				await(releases.get(call));
			}
		};
		java.util.concurrent.ExecutorService callers = java.util.concurrent.Executors.newFixedThreadPool(2);
		try (GpuBatcher<Float, Float> batcher = batcher(doubling(hold)).maxBatchSize(8)
			.maxQueueDelay(Duration.ofHours(1))
			.build()) {
			// Idle: the first call runs on its own thread, as a batch of one, while submitted items queue.
			java.util.concurrent.Future<Float> inline = callers.submit(() -> batcher.call(1f));
			await(starts.get(0));
			assertThat(threads.get(0)).startsWith("pool-");
			List<CompletableFuture<Float>> waiting = List.of(batcher.submit(2f), batcher.submit(3f));
			assertThat(batcher.queued()).as("no second batch beside the inline one (one slot)").isEqualTo(2);
			releases.get(0).countDown();
			assertThat(inline.get(30, TimeUnit.SECONDS)).isEqualTo(2f);
			// The queued pair runs on a dispatch thread; a call meanwhile waits in the queue.
			await(starts.get(1));
			java.util.concurrent.Future<Float> queued = callers.submit(() -> batcher.call(4f));
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
			while (batcher.queued() == 0 && System.nanoTime() < deadline) {
				Thread.sleep(1);
			}
			releases.get(1).countDown();
			for (CompletableFuture<Float> future : waiting) {
				get(future);
			}
			// The last batch had two items: the call is held until a second item joins it.
			CompletableFuture<Float> joins = batcher.submit(5f);
			assertThat(queued.get(30, TimeUnit.SECONDS)).isEqualTo(8f);
			assertThat(get(joins)).isEqualTo(10f);
			assertThat(this.seen).containsExactly(List.of(1f), List.of(2f, 3f), List.of(4f, 5f));
			assertThat(threads.get(1)).startsWith("gpu-");
			assertThat(threads.get(2)).startsWith("gpu-");
		}
		finally {
			callers.shutdownNow();
		}
		// A failure comes out of call as itself.
		try (GpuBatcher<Float, Float> plain = batcher(doubling((batch) -> {
		})).build()) {
			assertThatThrownBy(() -> plain.call(Float.NaN)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("NaN item");
			assertThat(plain.call(7f)).isEqualTo(14f);
		}
	}

}
