package dev.gpucompute.contract.batch;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.HostArray;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.BatchTimeoutException;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;

/**
 * The dynamic batcher under load, on every backend: concurrent submitters with keys,
 * cancellations, deadlines, failing items and poisoned batches, where every future must complete
 * exactly once with what belongs to it and the batcher's counts must add up.
 */
public abstract class BatcherSoakContractSuite extends BatcherContractFixture {

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
