package dev.gpucompute.contract.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.batch.Batch;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.settings.KernelTiming;

/**
 * How the dynamic batcher reports failures, on every backend (docs/runtime.md
 * "Batching", item 6): a failing batch fails only its own items and the next batch gets a clean
 * stream, and the handler can fail single items while a wrong result count fails the whole batch.
 */
public abstract class BatcherFailureContractSuite extends BatcherContractFixture {

	// ---- failures -------------------------------------------------------------------------------

	@Test
	void aFailingBatchFailsOnlyItsItemsAndTheNextBatchGetsACleanStream() throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		Set<String> streams = Collections.synchronizedSet(new java.util.HashSet<>());
		AtomicInteger calls = new AtomicInteger();
		// A pool of one stream: every batch runs on the same stream, one after the other.
		try (GpuContext one = builder().poolSize(1).maxSize(1).kernelTiming(KernelTiming.OFF).open()) {
			GpuLauncher launcher = one.launcher();
			Kernel good = launcher.load(ContractKernels.SAXPY);
			Kernel failing = launcher.load(ContractKernels.BOUNDED_SAXPY);
			BatchHandler<Float, Float> handler = (batch) -> {
				streams.add(batch.stream().name());
				int call = calls.getAndIncrement();
				if (call == 0) {
					started.countDown();
					await(release);
				}
				boolean fail = batch.items().contains(-1f);
				int n = batch.size();
				float[] x = new float[n];
				for (int i = 0; i < n; i++) {
					x[i] = batch.items().get(i);
				}
				try (DeviceBuffer dx = launcher.upload(HostArray.of(x)); DeviceBuffer dy = launcher.upload(HostArray.of(new float[n]))) {
					// The failing kernel runs with 64 threads per block, twice its launch bounds. Its failure
					// surfaces when the batcher waits for the stream after the handler, not here.
					launcher.launch(fail ? failing : good, LaunchConfig.linear(n, 64), n, 2f, dx, dy);
					if (fail) {
						List<Float> unread = new ArrayList<>(Collections.nCopies(n, 0f));
						return unread;
					}
					float[] y = new float[n];
					dy.download(HostArray.of(y), batch.stream()).join();
					List<Float> results = new ArrayList<>();
					for (float v : y) {
						results.add(v);
					}
					return results;
				}
			};
			try (GpuBatcher<Float, Float> batcher = GpuBatcher.builder(one, handler).name("failing")
				.batchKey((item) -> item < 0)
				.build()) {
				CompletableFuture<Float> first = batcher.submit(5f);
				await(started);
				List<CompletableFuture<Float>> bad = List.of(batcher.submit(-1f), batcher.submit(-2f));
				List<CompletableFuture<Float>> good2 = List.of(batcher.submit(7f), batcher.submit(8f));
				release.countDown();
				assertThat(get(first)).isEqualTo(10f);
				for (CompletableFuture<Float> future : bad) {
					try {
						get(future);
						throw new AssertionError("an item of the failing batch succeeded");
					}
					catch (ExecutionException ex) {
						// On CUDA the launch itself is refused, on the CPU the kernel fails while it runs.
						assertThat(ex.getCause()).isInstanceOf(dev.gpucompute.GpuException.class)
							.hasMessageContaining("bounded_saxpy");
						if (ex.getCause() instanceof KernelLaunchException) {
							assertThat(ex.getCause()).hasMessageContaining("bounded_saxpy");
						}
					}
				}
				assertThat(get(good2.get(0))).isEqualTo(14f);
				assertThat(get(good2.get(1))).isEqualTo(16f);
				batcher.close();
				BatcherStats stats = batcher.stats();
				assertThat(stats.failed()).isEqualTo(2);
				assertThat(stats.succeeded()).isEqualTo(3);
			}
			assertThat(streams).as("one stream for every batch").hasSize(1);
			assertThat(failing.stats().errors()).as("the failure is counted once").isEqualTo(1);
			assertThat(one.isHealthy()).isTrue();
		}
	}

	@Test
	void theHandlerCanFailSingleItemsAndAWrongResultCountFailsTheBatch() throws Exception {
		BatchHandler<Float, Float> handler = (batch) -> {
			List<Float> results = runSaxpy(batch, this.saxpy);
			for (int i = 0; i < batch.size(); i++) {
				if (batch.items().get(i) < 0) {
					batch.fail(i, new IllegalArgumentException("negative item " + batch.items().get(i)));
				}
			}
			if (batch.items().contains(99f)) {
				return results.subList(0, batch.size() - 1);
			}
			return results;
		};
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		Consumer<Batch<Float>> hold = holdFirst(started, release);
		try (GpuBatcher<Float, Float> batcher = batcher((batch) -> {
			hold.accept(batch);
			return handler.handle(batch);
		}).batchKey((item) -> item == 99f || item == 98f).build()) {
			CompletableFuture<Float> first = batcher.submit(0f);
			await(started);
			CompletableFuture<Float> ok = batcher.submit(1f);
			CompletableFuture<Float> negative = batcher.submit(-1f);
			CompletableFuture<Float> ok2 = batcher.submit(2f);
			CompletableFuture<Float> short1 = batcher.submit(98f);
			CompletableFuture<Float> short2 = batcher.submit(99f);
			release.countDown();
			get(first);
			assertThat(get(ok)).isEqualTo(2f);
			assertThat(get(ok2)).isEqualTo(4f);
			assertThatThrownBy(() -> get(negative)).cause().isInstanceOf(IllegalArgumentException.class)
				.hasMessage("negative item -1.0");
			for (CompletableFuture<Float> future : List.of(short1, short2)) {
				assertThatThrownBy(() -> get(future)).cause().isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("returned 1 results for a batch of 2 items");
			}
		}
		assertPoolFull();
	}

}
