package dev.gpucompute.contract.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;

import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.BatchTimeoutException;
import dev.gpucompute.batch.GpuBatcher;

/**
 * What happens to items waiting in the dynamic batcher's queue, on every backend
 * (docs/runtime.md "Batching", items 3 to 5): a full queue refuses at once with a retry hint, an
 * item whose deadline passes times out and never runs, a cancelled item leaves the queue at once;
 * and bad settings and items are refused with clear errors.
 */
public abstract class BatcherQueueContractSuite extends BatcherContractFixture {

	// ---- back-pressure, deadlines, cancellation -------------------------------------------------

	@Test
	void aFullQueueRefusesAtOnceWithARetryHint() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		try (GpuBatcher<Float, Float> batcher = batcher(doubling(holdFirst(started, release))).maxQueued(3).build()) {
			CompletableFuture<Float> running = batcher.submit(0f);
			await(started);
			List<CompletableFuture<Float>> queued = List.of(batcher.submit(1f), batcher.submit(2f), batcher.submit(3f));
			assertThatThrownBy(() -> batcher.submit(4f)).isInstanceOfSatisfying(BatchQueueFullException.class, (ex) -> {
				assertThat(ex.batcher()).isEqualTo("test");
				assertThat(ex.maxQueued()).isEqualTo(3);
				assertThat(ex.retryAfter()).isPositive();
				assertThat(ex).hasMessageContaining("Batcher 'test' is full: 3 items are queued");
			});
			assertThat(batcher.stats().rejected()).isEqualTo(1);
			assertThat(batcher.stats().queued()).isEqualTo(3);
			release.countDown();
			get(running);
			for (CompletableFuture<Float> future : queued) {
				get(future);
			}
			assertThat(this.seen).containsExactly(List.of(0f), List.of(1f, 2f, 3f));
			assertThat(get(batcher.submit(4f))).as("accepted again once there is room").isEqualTo(8f);
		}
	}

	@Test
	void anItemWhoseDeadlinePassesInTheQueueTimesOutAndNeverRuns() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		try (GpuBatcher<Float, Float> batcher = batcher(doubling(holdFirst(started, release)))
			.timeout(Duration.ofMillis(50))
			.build()) {
			CompletableFuture<Float> running = batcher.submit(0f);
			await(started);
			CompletableFuture<Float> late = batcher.submit(1f);
			CompletableFuture<Float> shorter = batcher.submit(2f, Duration.ofMillis(10));
			// Told while the batch still runs, by the deadline sweep, not when a dispatcher is next free.
			assertThatThrownBy(() -> get(late)).cause()
				.isInstanceOf(BatchTimeoutException.class)
				.hasMessageContaining("Item of batcher 'test' timed out after waiting")
				.hasMessageContaining("it was not run");
			assertThatThrownBy(() -> get(shorter)).cause().isInstanceOf(BatchTimeoutException.class);
			assertThat(running).isNotDone();
			release.countDown();
			assertThat(get(running)).isEqualTo(0f);
			assertThat(this.seen).as("expired items never reach the handler").containsExactly(List.of(0f));
			assertThat(batcher.stats().expired()).isEqualTo(2);
			assertThat(batcher.stats().queued()).isZero();
			assertThatThrownBy(() -> batcher.submit(3f, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("timeout must be positive");
		}
	}

	@Test
	void aCancelledItemLeavesTheQueueAtOnceAndIsNeverRun() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		try (GpuBatcher<Float, Float> batcher = batcher(doubling(holdFirst(started, release))).build()) {
			CompletableFuture<Float> running = batcher.submit(0f);
			await(started);
			CompletableFuture<Float> a = batcher.submit(1f);
			CompletableFuture<Float> b = batcher.submit(2f);
			CompletableFuture<Float> c = batcher.submit(3f);
			CompletableFuture<Float> dependent = b.thenApply((v) -> v + 1);
			assertThat(b.cancel(true)).isTrue();
			assertThat(dependent).isCompletedExceptionally();
			assertThat(batcher.stats().queued()).as("room made at once").isEqualTo(2);
			release.countDown();
			assertThat(get(a)).isEqualTo(2f);
			assertThat(get(c)).isEqualTo(6f);
			assertThatThrownBy(() -> get(b)).isInstanceOf(CancellationException.class);
			assertThat(this.seen).containsExactly(List.of(0f), List.of(1f, 3f));
			assertThat(batcher.stats().cancelled()).isEqualTo(1);
			// Cancelling a dependent stage does not cancel the item.
			CompletableFuture<Float> d = batcher.submit(4f);
			d.thenApply((v) -> v).cancel(true);
			assertThat(get(d)).isEqualTo(8f);
		}
	}

	// ---- bad input ------------------------------------------------------------------------------

	@Test
	void badSettingsAndItemsAreRejectedWithClearErrors() {
		BatchHandler<Float, Float> handler = (batch) -> List.of();
		assertThatThrownBy(() -> GpuBatcher.builder(this.context, handler).maxBatchSize(0))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxBatchSize must be between 1 and");
		assertThatThrownBy(() -> GpuBatcher.builder(this.context, handler).maxQueued(0))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxQueued must be between 1 and");
		assertThatThrownBy(() -> GpuBatcher.builder(this.context, handler).maxQueueDelay(Duration.ofMillis(-1)))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxQueueDelay must not be negative");
		assertThatThrownBy(() -> GpuBatcher.builder(this.context, handler).name("a b"))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("A batcher name must be");
		assertThatThrownBy(() -> GpuBatcher.builder(this.context, handler).maxConcurrentBatches(5).build())
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("maxConcurrentBatches (5) exceeds the 4 streams");
		assertThatThrownBy(() -> GpuBatcher.builder(null, handler)).isInstanceOf(NullPointerException.class);
		try (GpuBatcher<Float, Float> batcher = GpuBatcher.builder(this.context, handler).build()) {
			assertThatThrownBy(() -> batcher.submit(null)).isInstanceOf(NullPointerException.class);
			assertThat(batcher.stats().submitted()).isZero();
		}
		assertThat(GpuBatcher.openBatchers(this.context)).isEmpty();
	}

}
