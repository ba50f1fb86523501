package dev.gpucompute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;

/**
 * Tests for {@link GpuBatchers} and the batchers' place in the lifecycle: {@code gpu.batching.<name>.*}
 * reaches the batcher created under that name, and at stop the batchers close, their queued items
 * running, before the pool stops.
 */
@ExtendWith(OutputCaptureExtension.class)
class GpuBatchersTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
		.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=1", "gpu.streams.max-size=4",
				"gpu.cpu.threads=1");

	private static final BatchHandler<Integer, Integer> ECHO = (batch) -> new ArrayList<>(batch.items());

	@Test
	void aBatcherGetsTheSettingsOfItsName() {
		this.runner
			.withPropertyValues("gpu.batching.search.max-batch-size=16", "gpu.batching.search.max-queue-delay=2ms",
					"gpu.batching.search.max-queued=100", "gpu.batching.search.priority=high",
					"gpu.batching.search.timeout=5s", "gpu.batching.search.max-concurrent-batches=2",
					"gpu.streams.priority-limits.normal=3")
			.run((context) -> {
				GpuBatchers batchers = context.getBean(GpuBatchers.class);
				GpuBatcher<Integer, Integer> batcher = batchers.create("search", (Integer item) -> item % 2, ECHO);
				assertThat(batcher.maxBatchSize()).isEqualTo(16);
				assertThat(batcher.maxQueueDelay()).isEqualTo(Duration.ofMillis(2));
				assertThat(batcher.maxQueued()).isEqualTo(100);
				assertThat(batcher.priority()).isEqualTo(StreamPriority.HIGH);
				assertThat(batcher.timeout()).isEqualTo(Duration.ofSeconds(5));
				assertThat(batcher.maxConcurrentBatches()).isEqualTo(2);
				assertThat(batcher.submit(41).get(30, TimeUnit.SECONDS)).isEqualTo(41);
				GpuContext gpu = context.getBean(GpuContext.class);
				assertThat(GpuBatcher.openBatchers(gpu)).containsExactly(batcher);
				assertThat(gpu.streams().priorityLimit(StreamPriority.NORMAL)).isEqualTo(3);
				assertThat(gpu.streams().priorityLimit(StreamPriority.HIGH)).isEqualTo(4);
			});
	}

	@Test
	void aNameWithoutSettingsGetsTheDefaultsAndConfiguredNamesNeverCreatedAreReported(CapturedOutput output) {
		this.runner.withPropertyValues("gpu.batching.serach.max-batch-size=8").run((context) -> {
			assertThat(output).contains("gpu.batching has settings for [serach], but no batcher of that name was created");
			GpuBatcher<Integer, Integer> batcher = context.getBean(GpuBatchers.class).create("search", ECHO);
			assertThat(output).contains("No gpu.batching.search.* settings: batcher 'search' uses the defaults");
			assertThat(batcher.maxBatchSize()).isEqualTo(64);
			assertThat(batcher.maxQueued()).isEqualTo(1024);
			assertThat(batcher.priority()).isEqualTo(StreamPriority.NORMAL);
			assertThat(batcher.timeout()).isZero();
			assertThat(batcher.maxConcurrentBatches()).isEqualTo(1);
		});
	}

	@Test
	void atStopQueuedItemsRunBeforeThePoolStops(CapturedOutput output) throws Exception {
		CountDownLatch started = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		List<CompletableFuture<Integer>> futures = new ArrayList<>();
		AtomicReference<GpuContext> gpu = new AtomicReference<>();
		this.runner.withPropertyValues("gpu.batching.slow.max-batch-size=1").run((context) -> {
			gpu.set(context.getBean(GpuContext.class));
			GpuBatcher<Integer, Integer> batcher = context.getBean(GpuBatchers.class).create("slow", (batch) -> {
				if (batch.items().contains(0)) {
					started.countDown();
					release.await(30, TimeUnit.SECONDS);
				}
				// A stream of the pool is needed here, for every batch: the pool must still lease.
				try (var lease = gpu.get().streams().acquire(Duration.ofSeconds(5))) {
					return new ArrayList<>(batch.items());
				}
			});
			futures.add(batcher.submit(0));
			assertThat(started.await(30, TimeUnit.SECONDS)).isTrue();
			futures.add(batcher.submit(1));
			futures.add(batcher.submit(2));
			// The context closes (lifecycle stop, then destroy) when run() returns; release the held
			// batch from another thread once the stop has begun.
			CompletableFuture.runAsync(() -> {
				while (!batcher.isShutdown()) {
					Thread.onSpinWait();
				}
				release.countDown();
			});
		});
		for (int i = 0; i < futures.size(); i++) {
			assertThat(futures.get(i).get(30, TimeUnit.SECONDS)).isEqualTo(i);
		}
		assertThat(gpu.get().isClosed()).isTrue();
		assertThat(output).contains("Closed GPU batchers [slow]").contains("the 2 items queued at stop ran");
	}

}
