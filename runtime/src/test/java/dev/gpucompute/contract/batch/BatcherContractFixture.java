package dev.gpucompute.contract.batch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.batch.Batch;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.settings.KernelTiming;

/**
 * What the batcher contract suites share: a context of the backend under test with the contract
 * kernels loaded, opened before and closed after each test, and the handlers and waits their tests
 * are made of. Every ordering is made by latches inside the handler, never by a stopwatch: a batch
 * that must be "running" is held in the handler until the test lets it go.
 */
abstract class BatcherContractFixture {

	protected GpuContext context;

	protected GpuLauncher launcher;

	Kernel saxpy;

	Kernel bounded;

	/** Batches the handlers saw, as lists of items, in the order they ran. */
	final List<List<Float>> seen = Collections.synchronizedList(new ArrayList<>());

	/** A builder for the backend under test; the suite adds its own pool sizes. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	void open() {
		this.context = builder().poolSize(2).maxSize(4).acquireTimeout(Duration.ofSeconds(20))
			.kernelTiming(KernelTiming.OFF)
			.open();
		this.launcher = this.context.launcher();
		this.saxpy = this.launcher.load(ContractKernels.SAXPY);
		this.bounded = this.launcher.load(ContractKernels.BOUNDED_SAXPY);
	}

	@AfterEach
	void close() {
		if (this.context != null) {
			this.context.close();
		}
	}

	/**
	 * Doubles every item on the device: one upload of the batch, one saxpy launch on the batch's
	 * stream, one download; records the batch and calls {@code during} before the launch.
	 */
	BatchHandler<Float, Float> doubling(Consumer<Batch<Float>> during) {
		return (batch) -> {
			this.seen.add(List.copyOf(batch.items()));
			during.accept(batch);
			List<Float> results = runSaxpy(batch, this.saxpy);
			for (int i = 0; i < batch.size(); i++) {
				if (batch.items().get(i).isNaN()) {
					batch.fail(i, new IllegalArgumentException("NaN item"));
				}
			}
			return results;
		};
	}

	List<Float> runSaxpy(Batch<Float> batch, Kernel kernel) {
		int n = batch.size();
		float[] x = new float[n];
		for (int i = 0; i < n; i++) {
			x[i] = batch.items().get(i);
		}
		float[] y = new float[n];
		// No explicit stream: the batch's stream is the handler's current stream.
		try (DeviceBuffer dx = this.launcher.upload(HostArray.of(x)); DeviceBuffer dy = this.launcher.upload(HostArray.of(y))) {
			this.launcher.launch(kernel, LaunchConfig.linear(n, (kernel == this.bounded) ? 64 : 32), n, 2f, dx, dy);
			dy.download(HostArray.of(y), batch.stream()).join();
		}
		List<Float> results = new ArrayList<>(n);
		for (float v : y) {
			results.add(v);
		}
		return results;
	}

	static void await(CountDownLatch latch) {
		try {
			if (!latch.await(30, TimeUnit.SECONDS)) {
				throw new AssertionError("latch not released within 30 s");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new AssertionError(ex);
		}
	}

	/** A handler hook that holds the first batch until {@code release} opens, after {@code started}. */
	static Consumer<Batch<Float>> holdFirst(CountDownLatch started, CountDownLatch release) {
		AtomicInteger calls = new AtomicInteger();
		return (batch) -> {
			if (calls.getAndIncrement() == 0) {
				started.countDown();
				await(release);
			}
		};
	}

	GpuBatcher.Builder<Float, Float> batcher(BatchHandler<Float, Float> handler) {
		return GpuBatcher.builder(this.context, handler).name("test");
	}

	static <T> T get(CompletableFuture<T> future) throws Exception {
		return future.get(30, TimeUnit.SECONDS);
	}

	void waitForQueued(GpuBatcher<?, ?> batcher, int queued) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (batcher.queued() != queued) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError("queued " + batcher.queued() + ", expected " + queued);
			}
			Thread.sleep(1);
		}
	}

	void assertPoolFull() {
		this.context.synchronizeDevice();
		PoolStats stats = this.context.streams().stats();
		assertThat(stats.active()).as("leased streams").isZero();
		assertThat(this.context.events().inUse()).as("events in use").isZero();
	}

}
