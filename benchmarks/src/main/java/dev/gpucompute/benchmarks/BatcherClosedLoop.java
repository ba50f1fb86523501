package dev.gpucompute.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.batch.Batch;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.settings.KernelTiming;

/**
 * How a {@link GpuBatcher} forms batches under a closed loop, without HTTP: n client threads each
 * submit one item and wait for it, again and again; every batch takes a fixed time (a sleep, so
 * that the figure depends on the batcher and not on how busy the machine's cores are). Prints items
 * per second and the mean batch size for each number of clients, with {@code maxQueueDelay} zero
 * (the next batch takes whatever waits when the last one ends) and with a delay (the waiting items
 * are held after a batch of n until n wait). The ideal mean batch is n. Not a JMH benchmark: what is
 * measured is the batching, not a code path's cost.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar dev.gpucompute.benchmarks.BatcherClosedLoop [batch-ms] [seconds]</pre>
 */
public final class BatcherClosedLoop {

	private BatcherClosedLoop() {
	}

	public static void main(String[] args) throws Exception {
		long batchMillis = (args.length > 0) ? Long.parseLong(args[0]) : 10;
		long seconds = (args.length > 1) ? Long.parseLong(args[1]) : 3;
		System.out.printf(Locale.ROOT, "closed loop, %d ms per batch, %d s per figure%n", batchMillis, seconds);
		System.out.println("| clients | max-queue-delay | items/s | mean batch | batches |");
		System.out.println("|---|---|---|---|---|");
		for (int clients : new int[] { 1, 4, 16, 64 }) {
			for (Duration delay : List.of(Duration.ZERO, Duration.ofMillis(2), Duration.ofMillis(10))) {
				run(clients, delay, batchMillis, seconds);
			}
		}
	}

	private static void run(int clients, Duration delay, long batchMillis, long seconds) throws Exception {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(1)
			.kernelTiming(KernelTiming.OFF).open()) {
			GpuBatcher<Integer, Integer> batcher = GpuBatcher.builder(context, (Batch<Integer> batch) -> {
				Thread.sleep(batchMillis);
				return new ArrayList<>(batch.items());
			}).name("closed-loop").maxBatchSize(64).maxQueueDelay(delay).build();
			AtomicBoolean stop = new AtomicBoolean();
			ExecutorService threads = Executors.newFixedThreadPool(clients);
			for (int c = 0; c < clients; c++) {
				threads.execute(() -> {
					try {
						while (!stop.get()) {
							batcher.submit(1).get();
						}
					}
					catch (Exception ex) {
						throw new IllegalStateException(ex);
					}
				});
			}
			Thread.sleep(500);
			BatcherStats before = batcher.stats();
			long start = System.nanoTime();
			Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
			BatcherStats after = batcher.stats();
			double elapsed = (System.nanoTime() - start) / 1e9;
			stop.set(true);
			threads.shutdown();
			threads.awaitTermination(30, TimeUnit.SECONDS);
			batcher.close();
			long items = after.dispatched() - before.dispatched();
			long batches = after.batches() - before.batches();
			System.out.printf(Locale.ROOT, "| %d | %d ms | %.0f | %.2f | %d |%n", clients, delay.toMillis(), items / elapsed,
					(batches == 0) ? 0.0 : (double) items / batches, batches);
		}
	}

}
