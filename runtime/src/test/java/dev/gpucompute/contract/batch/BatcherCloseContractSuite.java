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

import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.Batch;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.RuntimeThreads;
import dev.gpucompute.settings.KernelTiming;

/**
 * Closing the dynamic batcher and its context, on every backend (docs/runtime.md
 * "Batching", items 7 and 8): queued items run within the drain timeout, what is left at the
 * timeout is abandoned and no future is stranded, and a closing context closes its batchers first
 * so that their queued items still get streams.
 */
public abstract class BatcherCloseContractSuite extends BatcherContractFixture {

	// ---- close ----------------------------------------------------------------------------------

	@Test
	void closeRunsQueuedItemsWithinTheDrainTimeout() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		GpuBatcher<Float, Float> batcher = batcher(doubling(holdFirst(started, release))).maxBatchSize(2)
			.drainTimeout(Duration.ofSeconds(30))
			.build();
		List<CompletableFuture<Float>> futures = new ArrayList<>();
		futures.add(batcher.submit(0f));
		await(started);
		for (int i = 1; i <= 5; i++) {
			futures.add(batcher.submit((float) i));
		}
		CompletableFuture<Void> closing = CompletableFuture.runAsync(batcher::close);
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (!batcher.isShutdown() && System.nanoTime() < deadline) {
			Thread.sleep(1);
		}
		assertThatThrownBy(() -> batcher.submit(9f)).isInstanceOf(ContextClosedException.class)
			.hasMessageContaining("Batcher 'test' is closed");
		release.countDown();
		get(closing);
		for (int i = 0; i < futures.size(); i++) {
			assertThat(get(futures.get(i))).isEqualTo(2f * i);
		}
		assertThat(GpuBatcher.openBatchers(this.context)).isEmpty();
		assertPoolFull();
	}

	@Test
	void closeAbandonsWhatIsLeftAtTheDrainTimeoutAndStrandsNothing() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		GpuBatcher<Float, Float> batcher = batcher(doubling(holdFirst(started, release))).drainTimeout(Duration.ZERO)
			.build();
		CompletableFuture<Float> running = batcher.submit(0f);
		await(started);
		List<CompletableFuture<Float>> queued = List.of(batcher.submit(1f), batcher.submit(2f));
		batcher.close();
		for (CompletableFuture<Float> future : List.of(running, queued.get(0), queued.get(1))) {
			assertThat(future).isDone();
			assertThatThrownBy(() -> get(future)).cause().isInstanceOf(ContextClosedException.class)
				.hasMessageContaining("abandoned at close");
		}
		assertThat(batcher.stats().abandoned()).isEqualTo(3);
		release.countDown();
		// The held handler finishes; its result is dropped, the future keeps its first outcome.
		assertThatThrownBy(() -> get(running)).cause().isInstanceOf(ContextClosedException.class);
		assertThat(this.seen).containsExactly(List.of(0f));
	}

	@Test
	void theContextClosesItsBatchersFirstSoThatQueuedItemsStillGetStreams() throws Exception {
		java.util.Set<Thread> before = RuntimeThreads.snapshot();
		GpuContext own = builder().poolSize(1).maxSize(2).drainTimeout(Duration.ofSeconds(30))
			.kernelTiming(KernelTiming.OFF)
			.open();
		Kernel kernel = own.launcher().load(ContractKernels.SAXPY);
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		AtomicInteger calls = new AtomicInteger();
		GpuBatcher<Float, Float> batcher = GpuBatcher.builder(own, (Batch<Float> batch) -> {
			if (calls.getAndIncrement() == 0) {
				started.countDown();
				await(release);
			}
			return runSaxpyOn(own.launcher(), kernel, batch);
		}).name("closing").priority(StreamPriority.HIGH).maxBatchSize(1).build();
		assertThat(GpuBatcher.openBatchers(own)).containsExactly(batcher);
		assertThatThrownBy(() -> GpuBatcher.builder(own, (Batch<Float> b) -> List.of()).name("closing").build())
			.isInstanceOf(IllegalStateException.class).hasMessageContaining("open batcher named 'closing'");
		List<CompletableFuture<Float>> futures = new ArrayList<>();
		futures.add(batcher.submit(1f));
		await(started);
		futures.add(batcher.submit(2f));
		futures.add(batcher.submit(3f));
		CompletableFuture<Void> closing = CompletableFuture.runAsync(own::close);
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (!batcher.isShutdown() && System.nanoTime() < deadline) {
			Thread.sleep(1);
		}
		release.countDown();
		get(closing);
		// Each of the three ran in a batch of its own after close began: the pool still leased streams.
		assertThat(get(futures.get(0))).isEqualTo(2f);
		assertThat(get(futures.get(1))).isEqualTo(4f);
		assertThat(get(futures.get(2))).isEqualTo(6f);
		assertThat(calls).hasValue(3);
		assertThatThrownBy(() -> GpuBatcher.builder(own, (Batch<Float> b) -> List.of()).name("late").build())
			.isInstanceOf(ContextClosedException.class);
		assertThat(RuntimeThreads.leftSince(before, 10)).as("threads of the context and its batcher").isEmpty();
	}

	private static List<Float> runSaxpyOn(GpuLauncher launcher, Kernel kernel, Batch<Float> batch) {
		int n = batch.size();
		float[] x = new float[n];
		for (int i = 0; i < n; i++) {
			x[i] = batch.items().get(i);
		}
		float[] y = new float[n];
		try (DeviceBuffer dx = launcher.upload(HostArray.of(x)); DeviceBuffer dy = launcher.upload(HostArray.of(y))) {
			launcher.launch(kernel, LaunchConfig.linear(n, 32), n, 2f, dx, dy);
			dy.download(HostArray.of(y), batch.stream()).join();
		}
		List<Float> results = new ArrayList<>(n);
		for (float v : y) {
			results.add(v);
		}
		return results;
	}

}
