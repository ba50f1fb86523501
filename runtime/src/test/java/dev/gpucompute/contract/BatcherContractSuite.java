package dev.gpucompute.contract;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Batch;
import dev.gpucompute.BatchHandler;
import dev.gpucompute.BatchQueueFullException;
import dev.gpucompute.BatchTimeoutException;
import dev.gpucompute.BatcherStats;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuBatcher;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.KernelTiming;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.PoolStats;
import dev.gpucompute.StreamPriority;

/**
 * The dynamic batcher's semantics on every backend (issue 21; docs/runtime.md "Batching"): batches
 * run real kernels on their leased streams, so the CUDA twin covers the CUDA path. Every ordering
 * is made by latches inside the handler, never by a stopwatch: a batch that must be "running" is
 * held in the handler until the test lets it go.
 */
public abstract class BatcherContractSuite {

	protected GpuContext context;

	protected GpuLauncher launcher;

	private Kernel saxpy;

	private Kernel bounded;

	/** Batches the handlers saw, as lists of items, in the order they ran. */
	private final List<List<Float>> seen = Collections.synchronizedList(new ArrayList<>());

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
	private BatchHandler<Float, Float> doubling(Consumer<Batch<Float>> during) {
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

	private List<Float> runSaxpy(Batch<Float> batch, Kernel kernel) {
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

	private static void await(CountDownLatch latch) {
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
	private static Consumer<Batch<Float>> holdFirst(CountDownLatch started, CountDownLatch release) {
		AtomicInteger calls = new AtomicInteger();
		return (batch) -> {
			if (calls.getAndIncrement() == 0) {
				started.countDown();
				await(release);
			}
		};
	}

	private GpuBatcher.Builder<Float, Float> batcher(BatchHandler<Float, Float> handler) {
		return GpuBatcher.builder(this.context, handler).name("test");
	}

	private static <T> T get(CompletableFuture<T> future) throws Exception {
		return future.get(30, TimeUnit.SECONDS);
	}

	private void waitForQueued(GpuBatcher<?, ?> batcher, int queued) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (batcher.queued() != queued) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError("queued " + batcher.queued() + ", expected " + queued);
			}
			Thread.sleep(1);
		}
	}

	private void assertPoolFull() {
		this.context.synchronize();
		PoolStats stats = this.context.streams().stats();
		assertThat(stats.active()).as("leased streams").isZero();
		assertThat(this.context.events().inUse()).as("events in use").isZero();
	}

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
		assertThat(this.context.batchers()).isEmpty();
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
		assertThat(own.batchers()).containsExactly(batcher);
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
		assertThat(this.context.batchers()).isEmpty();
	}

	// ---- soak -----------------------------------------------------------------------------------

	/** How long the batcher soak runs; about 10 s in CI, longer with -Dgpu.soak.seconds. */
	private static long soakSeconds() {
		return Math.max(1, Long.getLong("gpu.soak.seconds", 20) / 2);
	}

	/** One soak item: its own input, its key, and what the test does with it. */
	private record SoakItem(int id, float x, int key, Mode mode) {
	}

	private enum Mode {

		/** Submitted and waited for: must get 2x. */
		PLAIN,
		/** The handler fails it alone: must fail with its own id. */
		FAILING,
		/** Its batch's kernel fails: every item of that batch must fail, no other. */
		POISON,
		/** A deadline of a few microseconds: 2x or a timeout. */
		DEADLINE,
		/** Cancelled right after submit: cancelled, or its result when it was done already. */
		CANCELLED,
		/** Through call (inline when the batcher is idle): must get 2x, or its batch's failure. */
		CALLED

	}

	/**
	 * 8 threads submit items with 4 keys for a while; 1 % of the items fail alone, 0.2 % poison their
	 * whole batch with a failing kernel, 2 % have a deadline of microseconds, 2 % are cancelled at
	 * once, 10 % go through {@code call} (inline when the batcher is idle). Every future must complete exactly once (one callback), with its own result or the
	 * failure that belongs to it; the batcher's counts must add up; nothing is held afterwards.
	 */
	@Test
	void soakWithConcurrentSubmittersCancellationsDeadlinesAndFailingItems() throws Exception {
		int threads = 8;
		int perThread = 40_000;
		java.util.Map<Integer, Integer> batchOf = new java.util.concurrent.ConcurrentHashMap<>();
		Set<Integer> poisonedBatches = java.util.concurrent.ConcurrentHashMap.newKeySet();
		AtomicInteger batchNumbers = new AtomicInteger();
		BatchHandler<SoakItem, Float> handler = (batch) -> {
			int number = batchNumbers.incrementAndGet();
			int n = batch.size();
			float[] x = new float[n];
			boolean poison = false;
			for (int i = 0; i < n; i++) {
				SoakItem item = batch.items().get(i);
				batchOf.put(item.id(), number);
				x[i] = item.x();
				poison |= item.mode() == Mode.POISON;
				if (item.mode() == Mode.FAILING) {
					batch.fail(i, new IllegalStateException("failing item " + item.id()));
				}
			}
			if (poison) {
				poisonedBatches.add(number);
			}
			float[] y = new float[n];
			try (DeviceBuffer dx = this.launcher.upload(HostArray.of(x)); DeviceBuffer dy = this.launcher.upload(HostArray.of(y))) {
				// A poisoned batch runs the kernel that fails with 64-thread blocks (twice its bounds).
				this.launcher.launch(poison ? this.bounded : this.saxpy, LaunchConfig.linear(n, poison ? 64 : 32), n, 2f,
						dx, dy);
				dy.download(HostArray.of(y), batch.stream()).join();
			}
			List<Float> results = new ArrayList<>(n);
			for (float v : y) {
				results.add(v);
			}
			return results;
		};
		List<List<Object[]>> perThreadRecords = new ArrayList<>();
		AtomicInteger rejected = new AtomicInteger();
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(soakSeconds());
		GpuBatcher<SoakItem, Float> batcher = GpuBatcher.builder(this.context, handler).name("soak")
			.batchKey(SoakItem::key)
			.maxBatchSize(32)
			.maxQueued(256)
			.maxQueueDelay(Duration.ofMillis(1))
			.maxConcurrentBatches(2)
			.build();
		java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
		try {
			List<java.util.concurrent.Future<List<Object[]>>> workers = new ArrayList<>();
			for (int t = 0; t < threads; t++) {
				int thread = t;
				workers.add(pool.submit(() -> {
					java.util.SplittableRandom random = new java.util.SplittableRandom(2100 + thread);
					List<Object[]> records = new ArrayList<>();
					for (int i = 0; i < perThread && System.nanoTime() < deadline; i++) {
						int roll = random.nextInt(1000);
						Mode mode = (roll < 10) ? Mode.FAILING : (roll < 12) ? Mode.POISON : (roll < 32) ? Mode.DEADLINE
								: (roll < 52) ? Mode.CANCELLED : (roll < 152) ? Mode.CALLED : Mode.PLAIN;
						SoakItem item = new SoakItem(thread * perThread + i, random.nextInt(1 << 20), random.nextInt(4),
								mode);
						CompletableFuture<Float> future;
						AtomicInteger callbacks = new AtomicInteger();
						try {
							if (mode == Mode.CALLED) {
								try {
									future = CompletableFuture.completedFuture(batcher.call(item));
								}
								catch (BatchQueueFullException ex) {
									throw ex;
								}
								catch (RuntimeException ex) {
									future = CompletableFuture.failedFuture(ex);
								}
							}
							else {
								future = (mode == Mode.DEADLINE)
										? batcher.submit(item, Duration.ofNanos(1 + random.nextInt(200_000)))
										: batcher.submit(item);
							}
						}
						catch (BatchQueueFullException ex) {
							rejected.incrementAndGet();
							Thread.sleep(1);
							continue;
						}
						future.whenComplete((v, e) -> callbacks.incrementAndGet());
						boolean cancelledByUs = (mode == Mode.CANCELLED) && future.cancel(true);
						records.add(new Object[] { item, future, callbacks, cancelledByUs });
					}
					return records;
				}));
			}
			for (java.util.concurrent.Future<List<Object[]>> worker : workers) {
				perThreadRecords.add(worker.get(soakSeconds() + 120, TimeUnit.SECONDS));
			}
		}
		finally {
			pool.shutdownNow();
		}
		int total = 0;
		int ok = 0;
		int failedAlone = 0;
		int failedWithBatch = 0;
		int timedOut = 0;
		int cancelled = 0;
		int called = 0;
		int stranded = 0;
		List<String> wrong = new ArrayList<>();
		for (List<Object[]> records : perThreadRecords) {
			for (Object[] record : records) {
				total++;
				SoakItem item = (SoakItem) record[0];
				@SuppressWarnings("unchecked")
				CompletableFuture<Float> future = (CompletableFuture<Float>) record[1];
				boolean cancelledByUs = (Boolean) record[3];
				Integer batch = batchOf.get(item.id());
				boolean inPoisonedBatch = batch != null && poisonedBatches.contains(batch);
				String outcome;
				if (item.mode() == Mode.CALLED) {
					called++;
				}
				try {
					Float value = future.get(60, TimeUnit.SECONDS);
					outcome = (value == 2 * item.x() && !inPoisonedBatch && item.mode() != Mode.FAILING && !cancelledByUs)
							? "ok" : "wrong value " + value;
					ok++;
				}
				catch (java.util.concurrent.TimeoutException ex) {
					outcome = "stranded";
					stranded++;
				}
				catch (CancellationException ex) {
					outcome = cancelledByUs ? "ok" : "cancelled without a cancel";
					cancelled++;
				}
				catch (ExecutionException ex) {
					Throwable cause = ex.getCause();
					if (cause instanceof BatchTimeoutException) {
						outcome = (item.mode() == Mode.DEADLINE && batch == null) ? "ok" : "unexpected timeout";
						timedOut++;
					}
					else if (item.mode() == Mode.FAILING) {
						// Its own failure, also in a poisoned batch: the handler reported it.
						outcome = ("failing item " + item.id()).equals(cause.getMessage()) ? "ok" : "failure " + cause;
						failedAlone++;
					}
					else if (inPoisonedBatch) {
						outcome = (cause instanceof dev.gpucompute.GpuException
								&& String.valueOf(cause.getMessage()).contains("bounded_saxpy")) ? "ok" : "batch failure " + cause;
						failedWithBatch++;
					}
					else {
						outcome = "failure " + cause;
					}
				}
				if (!outcome.equals("ok") && wrong.size() < 5) {
					wrong.add(item + ": " + outcome);
				}
				if (((AtomicInteger) record[2]).get() != 1 && wrong.size() < 10) {
					wrong.add(item + ": completed " + ((AtomicInteger) record[2]).get() + " times");
				}
			}
		}
		batcher.close();
		BatcherStats stats = batcher.stats();
		System.out.printf("batcher soak (%s, %d threads, %d s): items=%d (called %d) ok=%d failed alone=%d failed with "
				+ "their batch=%d (%d poisoned batches) timed out=%d cancelled=%d rejected=%d stranded=%d; batches=%d mean "
				+ "size %.1f; %s%n",
				this.context.backend(), threads, soakSeconds(), total, called, ok, failedAlone, failedWithBatch,
				poisonedBatches.size(), timedOut, cancelled, rejected.get(), stranded, stats.batches(),
				stats.meanBatchSize(), stats);
		assertThat(wrong).as("items with an outcome that is not theirs").isEmpty();
		assertThat(stranded).as("futures never completed").isZero();
		assertThat(total).isGreaterThan(1000);
		assertThat(failedAlone).isPositive();
		assertThat(called).isPositive();
		assertThat(stats.submitted()).isEqualTo(total);
		assertThat(stats.rejected()).isEqualTo(rejected.get());
		assertThat(stats.queued()).isZero();
		assertThat(stats.abandoned()).isZero();
		assertThat(stats.expired() + stats.cancelled() + stats.dispatched()).as("every accepted item accounted for")
			.isEqualTo(stats.submitted());
		assertThat(stats.expired()).isEqualTo(timedOut);
		assertThat(this.bounded.stats().errors()).as("kernel failures counted once per poisoned batch")
			.isEqualTo(poisonedBatches.size());
		assertThat(this.context.isHealthy()).isTrue();
		assertPoolFull();
	}

}
