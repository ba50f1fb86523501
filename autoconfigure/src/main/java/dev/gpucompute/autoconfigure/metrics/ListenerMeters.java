package dev.gpucompute.autoconfigure.metrics;

import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;

import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.GpuContext;
import dev.gpucompute.Kernel;
import dev.gpucompute.listener.KernelLoad;
import dev.gpucompute.KernelNotFoundException;
import org.jspecify.annotations.Nullable;

import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.BATCH_QUEUED;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.BATCH_REJECTED;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.BATCH_SIZE;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.BATCH_TIMEOUTS;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.BATCH_WAIT;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.KERNEL_DURATION;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.KERNEL_LAUNCHES;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.KERNEL_LOAD_WAIT;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.OUTCOME_ERROR;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.OUTCOME_SUCCESS;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_ACQUIRE;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_USAGE;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.TAG_BATCHER;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.TAG_KERNEL;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.TAG_OUTCOME;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.TAG_TRIGGER;

/**
 * The meters of one context in one registry that move with {@link MicrometerGpuListener}'s callbacks:
 * lease waits and hold times, device time of timed launches, kernel loads that waited, batch sizes
 * and queue waits; and the meters of kernels and batchers, registered when one is first seen (at
 * binding, or when a callback names one loaded or built later). {@link GpuMetrics#bindTo} creates
 * it and hands it to the listener.
 *
 * <p>Thread-safe: callbacks arrive from any thread; a kernel's or batcher's meters are registered
 * once ({@code computeIfAbsent}), and a callback for a registered kernel is one map lookup and one
 * timer update.
 */
final class ListenerMeters {

	private final GpuContext context;

	private final Iterable<Tag> tags;

	private final MeterRegistry registry;

	private final Timer acquire;

	private final Timer usage;

	/** Per-kernel device-time timers; a key exists once the kernel's meters are registered. */
	private final Map<String, Timer> kernels = new ConcurrentHashMap<>();

	/** Per-batcher meters by name; a key exists once its meters are registered. */
	private final Map<String, BatcherMeters> batchers = new ConcurrentHashMap<>();

	/**
	 * @param context the context whose kernels and batchers the meters are of
	 * @param tags the tags of every meter of the context
	 * @param registry the registry the meters go to
	 */
	ListenerMeters(GpuContext context, Iterable<Tag> tags, MeterRegistry registry) {
		this.context = context;
		this.tags = tags;
		this.registry = registry;
		this.acquire = Timer.builder(STREAMS_ACQUIRE)
			.description("Time threads waited for a GPU stream lease")
			.tags(this.tags)
			.register(registry);
		this.usage = Timer.builder(STREAMS_USAGE)
			.description("Time GPU stream leases were held")
			.tags(this.tags)
			.register(registry);
	}

	void leaseAcquired(long waitNanos) {
		this.acquire.record(waitNanos, TimeUnit.NANOSECONDS);
	}

	void leaseReleased(long heldNanos) {
		this.usage.record(heldNanos, TimeUnit.NANOSECONDS);
	}

	void kernelTimed(String name, long nanos) {
		Timer timer = this.kernels.get(name);
		if (timer == null) {
			timer = register(name);
		}
		if (timer != null) {
			// A negative span would be dropped by Micrometer and the count would then disagree with
			// Kernel.stats().timedLaunches(); record it as zero instead.
			timer.record(Math.max(nanos, 0), TimeUnit.NANOSECONDS);
		}
	}

	void kernelLoaded(KernelLoad load) {
		if (load.waited()) {
			Timer.builder(KERNEL_LOAD_WAIT)
				.description("GPU kernel loads that began while work was in flight and whose load step took at least "
						+ "the threshold (a CUDA module load waits for the device): the time of that step")
				.tags(this.tags)
				.tag(TAG_KERNEL, load.kernel())
				.tag(TAG_TRIGGER, load.trigger().name().toLowerCase(Locale.ROOT))
				.register(this.registry)
				.record(load.deviceTime());
		}
	}

	void kernelSeen(String name) {
		if (!this.kernels.containsKey(name)) {
			register(name);
		}
	}

	/** Registers a loaded kernel's meters; names that are not loaded kernels get none. */
	private @Nullable Timer register(String name) {
		Kernel kernel;
		try {
			kernel = this.context.launcher().kernel(name);
		}
		catch (KernelNotFoundException ex) {
			return null;
		}
		return this.kernels.computeIfAbsent(name, (key) -> registerKernel(kernel));
	}

	/** Registers a batcher's meters, or points existing ones of that name at the batcher now open. */
	void batcherOpened(String name) {
		GpuBatcher<?, ?> batcher = openBatcher(name);
		if (batcher == null) {
			return;
		}
		this.batchers.computeIfAbsent(name, this::registerBatcher).follow(batcher);
	}

	void batchDispatched(String name, int size) {
		BatcherMeters meters = batcherMeters(name);
		if (meters != null) {
			meters.size.record(size);
		}
	}

	void batchItemWaited(String name, long waitNanos) {
		BatcherMeters meters = batcherMeters(name);
		if (meters != null) {
			meters.wait.record(Math.max(waitNanos, 0), TimeUnit.NANOSECONDS);
		}
	}

	private @Nullable BatcherMeters batcherMeters(String name) {
		BatcherMeters meters = this.batchers.get(name);
		if (meters == null) {
			batcherOpened(name);
			meters = this.batchers.get(name);
		}
		return meters;
	}

	private @Nullable GpuBatcher<?, ?> openBatcher(String name) {
		for (GpuBatcher<?, ?> batcher : GpuBatcher.openBatchers(this.context)) {
			if (batcher.name().equals(name)) {
				return batcher;
			}
		}
		return null;
	}

	private BatcherMeters registerBatcher(String name) {
		Tags batcherTags = Tags.concat(this.tags, TAG_BATCHER, name);
		BatcherMeters meters = new BatcherMeters(
				DistributionSummary.builder(BATCH_SIZE)
					.description("Items per batch a GPU batcher dispatched")
					.baseUnit("items")
					.tags(batcherTags)
					.register(this.registry),
				Timer.builder(BATCH_WAIT)
					.description("Time items waited in a GPU batcher's queue before their batch was dispatched")
					.tags(batcherTags)
					.register(this.registry));
		Gauge.builder(BATCH_QUEUED, meters, BatcherMeters::queued)
			.description("Items waiting in a GPU batcher's queue")
			.tags(batcherTags)
			.register(this.registry);
		FunctionCounter.builder(BATCH_REJECTED, meters, BatcherMeters::rejected)
			.description("Items a GPU batcher refused because its queue was full")
			.tags(batcherTags)
			.register(this.registry);
		FunctionCounter.builder(BATCH_TIMEOUTS, meters, BatcherMeters::timeouts)
			.description("Items that timed out in a GPU batcher's queue without running")
			.tags(batcherTags)
			.register(this.registry);
		return meters;
	}

	private Timer registerKernel(Kernel kernel) {
		Tags kernelTags = Tags.concat(this.tags, TAG_KERNEL, kernel.name());
		FunctionCounter.builder(KERNEL_LAUNCHES, kernel, (k) -> k.stats().launches())
			.description("GPU kernel launches")
			.tags(kernelTags)
			.tag(TAG_OUTCOME, OUTCOME_SUCCESS)
			.register(this.registry);
		FunctionCounter.builder(KERNEL_LAUNCHES, kernel, (k) -> k.stats().errors())
			.description("GPU kernel launches")
			.tags(kernelTags)
			.tag(TAG_OUTCOME, OUTCOME_ERROR)
			.register(this.registry);
		return Timer.builder(KERNEL_DURATION)
			.description("Device time of timed GPU kernel launches, measured with events")
			.tags(kernelTags)
			.register(this.registry);
	}

	/**
	 * The meters of one batcher name; they follow the batcher of that name now open, and carry the
	 * counts of earlier ones forward so that the counters never go down.
	 */
	static final class BatcherMeters {

		final DistributionSummary size;

		final Timer wait;

		private @Nullable GpuBatcher<?, ?> batcher;

		private long rejectedBefore;

		private long timeoutsBefore;

		BatcherMeters(DistributionSummary size, Timer wait) {
			this.size = size;
			this.wait = wait;
		}

		synchronized void follow(GpuBatcher<?, ?> next) {
			if (this.batcher != null && this.batcher != next) {
				GpuBatcher.BatcherStats stats = this.batcher.stats();
				this.rejectedBefore += stats.rejected();
				this.timeoutsBefore += stats.expired();
			}
			this.batcher = next;
		}

		synchronized double queued() {
			return (this.batcher != null) ? this.batcher.queued() : 0;
		}

		synchronized double rejected() {
			return this.rejectedBefore + ((this.batcher != null) ? this.batcher.stats().rejected() : 0);
		}

		synchronized double timeouts() {
			return this.timeoutsBefore + ((this.batcher != null) ? this.batcher.stats().expired() : 0);
		}

	}

}
