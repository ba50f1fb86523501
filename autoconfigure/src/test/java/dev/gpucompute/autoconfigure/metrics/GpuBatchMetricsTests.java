package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.settings.KernelTiming;

/**
 * The batcher meters ({@code gpu.batch.*}, docs/observability.md, "Meters"): exact counts for a known sequence of
 * batches, held in order by a latch in the handler.
 */
class GpuBatchMetricsTests {

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	private final MicrometerGpuListener listener = new MicrometerGpuListener();

	private GpuContext context;

	private final CountDownLatch started = new CountDownLatch(1);

	private final CountDownLatch release = new CountDownLatch(1);

	@BeforeEach
	void open() {
		this.context = GpuContext.builder()
			.backend(Backend.CPU)
			.poolSize(1)
			.maxSize(2)
			.cpuThreads(1)
			.kernelTiming(KernelTiming.OFF)
			.listener(this.listener)
			.open();
	}

	@AfterEach
	void close() {
		this.release.countDown();
		this.context.close();
	}

	/** Echoes its items; holds the first batch until {@link #release} opens. */
	private BatchHandler<Integer, Integer> echo() {
		return (batch) -> {
			if (batch.items().contains(0)) {
				this.started.countDown();
				this.release.await(30, TimeUnit.SECONDS);
			}
			return new ArrayList<>(batch.items());
		};
	}

	@Test
	void sizesWaitsQueueRefusalsAndTimeoutsAreCountedPerBatcher() throws Exception {
		GpuBatcher<Integer, Integer> early = GpuBatcher.builder(this.context, echo()).name("early").build();
		// Bound after the first batcher was built, before the second: both get their meters.
		new GpuMetrics(this.context, this.listener).bindTo(this.registry);
		GpuBatcher<Integer, Integer> batcher = GpuBatcher.builder(this.context, echo())
			.name("search")
			.maxQueued(3)
			.build();
		Tags tags = Tags.of("batcher", "search", "gpu", "0", "backend", "cpu");
		assertThat(this.registry.get(GpuMeterNames.BATCH_QUEUED).tags(tags).gauge().value()).isZero();
		assertThat(this.registry.get(GpuMeterNames.BATCH_SIZE).tag("batcher", "early").summary().count()).isZero();

		CompletableFuture<Integer> first = batcher.submit(0);
		assertThat(this.started.await(30, TimeUnit.SECONDS)).isTrue();
		List<CompletableFuture<Integer>> queued = List.of(batcher.submit(1), batcher.submit(2),
				batcher.submit(3, Duration.ofMillis(500)));
		// Refused while item 3 still holds its place: with a 1 ms deadline the sweep could drop it
		// first on a loaded machine and make room (seen once).
		assertThatThrownBy(() -> batcher.submit(4)).isInstanceOf(BatchQueueFullException.class);
		// The item with the 500 ms deadline times out while the first batch is held.
		assertThatThrownBy(() -> queued.get(2).get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(
				dev.gpucompute.batch.BatchTimeoutException.class);
		assertThat(this.registry.get(GpuMeterNames.BATCH_QUEUED).tags(tags).gauge().value()).isEqualTo(2);
		this.release.countDown();
		first.get(30, TimeUnit.SECONDS);
		queued.get(0).get(30, TimeUnit.SECONDS);
		queued.get(1).get(30, TimeUnit.SECONDS);
		batcher.close();

		// Two batches: the held one of 1 item, then the 2 items that waited.
		assertThat(this.registry.get(GpuMeterNames.BATCH_SIZE).tags(tags).summary().count()).isEqualTo(2);
		assertThat(this.registry.get(GpuMeterNames.BATCH_SIZE).tags(tags).summary().totalAmount()).isEqualTo(3);
		assertThat(this.registry.get(GpuMeterNames.BATCH_SIZE).tags(tags).summary().getId().getBaseUnit())
			.isEqualTo("items");
		assertThat(this.registry.get(GpuMeterNames.BATCH_WAIT).tags(tags).timer().count()).isEqualTo(3);
		assertThat(this.registry.get(GpuMeterNames.BATCH_REJECTED).tags(tags).functionCounter().count()).isEqualTo(1);
		assertThat(this.registry.get(GpuMeterNames.BATCH_TIMEOUTS).tags(tags).functionCounter().count()).isEqualTo(1);
		assertThat(this.registry.get(GpuMeterNames.BATCH_QUEUED).tags(tags).gauge().value()).isZero();

		// A new batcher of the same name continues the counters instead of starting them at zero.
		GpuBatcher<Integer, Integer> again = GpuBatcher.builder(this.context, echo()).name("search").maxQueued(1)
			.build();
		assertThat(this.registry.get(GpuMeterNames.BATCH_REJECTED).tags(tags).functionCounter().count()).isEqualTo(1);
		assertThat(again.submit(7).get(30, TimeUnit.SECONDS)).isEqualTo(7);
		again.close();
		assertThat(this.registry.get(GpuMeterNames.BATCH_SIZE).tags(tags).summary().count()).isEqualTo(3);
		early.close();
	}

	@Test
	void batchWaitsAndSizesGetTheDashboardsBuckets() {
		this.registry.config().meterFilter(new GpuHistogramBuckets());
		new GpuMetrics(this.context, this.listener).bindTo(this.registry);
		try (GpuBatcher<Integer, Integer> batcher = GpuBatcher.builder(this.context, echo()).name("b").build()) {
			assertThat(this.registry.get(GpuMeterNames.BATCH_WAIT).timer().takeSnapshot().histogramCounts()).hasSize(25);
			assertThat(this.registry.get(GpuMeterNames.BATCH_SIZE).summary().takeSnapshot().histogramCounts()).hasSize(17);
			assertThat(batcher.queued()).isZero();
		}
	}

}
