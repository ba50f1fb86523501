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
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.gpucompute.BatcherStats;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuBatcher;
import dev.gpucompute.GpuContext;
import dev.gpucompute.HostMemoryInfo;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelLoad;
import dev.gpucompute.KernelNotFoundException;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.StreamPool;

/**
 * Binds the meters of one {@link GpuContext} to a {@link MeterRegistry}: the names, types and tags
 * of docs/observability.md, "Meters".
 *
 * <table>
 * <caption>Meters</caption>
 * <tr><th>meter</th><th>type</th><th>source</th></tr>
 * <tr><td>{@code gpu.kernel.launches} (tags {@code kernel}, {@code outcome})</td><td>function
 * counter</td><td>{@link Kernel#stats()}: {@code success} = launches enqueued, {@code error} = launches
 * rejected by the backend plus kernels that failed while running</td></tr>
 * <tr><td>{@code gpu.kernel.duration} (tag {@code kernel})</td><td>timer</td><td>device time of timed
 * launches ({@code gpu.metrics.kernel-timing})</td></tr>
 * <tr><td>{@code gpu.streams.active}, {@code .idle}, {@code .pending}, {@code .max}</td><td>gauges</td>
 * <td>{@link StreamPool#stats()}</td></tr>
 * <tr><td>{@code gpu.streams.acquire}, {@code gpu.streams.usage}</td>
 * <td>timers</td><td>the listener</td></tr>
 * <tr><td>{@code gpu.streams.timeout}</td><td>function counter</td><td>the pool's timeout count</td></tr>
 * <tr><td>{@code gpu.streams.utilization}</td><td>gauge (0..1)</td><td>the pool's sampled busy
 * share</td></tr>
 * <tr><td>{@code gpu.events.live}</td><td>gauge</td><td>{@link EventRegistry#live()}</td></tr>
 * <tr><td>{@code gpu.memory.used}, {@code gpu.memory.cached}, {@code gpu.memory.total}</td><td>gauges, bytes</td>
 * <td>{@link GpuContext#memory()}</td></tr>
 * <tr><td>{@code gpu.staging.used}, {@code gpu.staging.budget}</td><td>gauges, bytes</td><td>{@link
 * GpuContext#hostMemory()}: page-locked staging held by array and buffer copies, and the most they
 * may hold at once</td></tr>
 * <tr><td>{@code gpu.staging.pending}</td><td>gauge</td><td>copies waiting for room in the staging
 * budget</td></tr>
 * <tr><td>{@code gpu.staging.timeout}</td><td>function counter</td><td>copies that gave up waiting
 * for staging ({@code StagingExhaustedException})</td></tr>
 * <tr><td>{@code gpu.batch.size} (tag {@code batcher})</td><td>distribution summary, items</td><td>the
 * listener: items per dispatched batch</td></tr>
 * <tr><td>{@code gpu.batch.wait} (tag {@code batcher})</td><td>timer</td><td>the listener: time each
 * dispatched item waited in its batcher's queue</td></tr>
 * <tr><td>{@code gpu.batch.queued} (tag {@code batcher})</td><td>gauge</td><td>{@link GpuBatcher#queued()}</td></tr>
 * <tr><td>{@code gpu.batch.rejected}, {@code gpu.batch.timeouts} (tag {@code batcher})</td><td>function
 * counters</td><td>{@link GpuBatcher#stats()}: items refused because the queue was full, items
 * that expired in the queue</td></tr>
 * <tr><td>{@code gpu.graph.*}</td><td>see {@link GpuGraphMetrics}</td><td>the context's graphs</td></tr>
 * </table>
 *
 * <p>A batcher's meters are registered when it is built (or, for batchers built before binding,
 * at binding); a later batcher of the same name on the same context continues its counters.
 * Batcher names are chosen by the application, so the {@code batcher} tag's cardinality is
 * bounded by the code.
 *
 * <p>Every meter carries the tags {@code gpu} (device ordinal), {@code backend} ({@code cuda},
 * {@code cpu}) and {@code uuid} (the device UUID, as DCGM exporter labels it, so dashboards can join
 * the two). Kernel tags only ever name kernels loaded into the context, so their cardinality is
 * bounded by the kernel registry: kernels loaded at bind time are registered up front (their series
 * exist at zero), kernels loaded later on their first launch.
 *
 * <p>The timers carry no histogram of their own: percentiles and buckets are the registry's
 * configuration (in Spring Boot, {@code management.metrics.distribution.*}).
 * {@link GpuHistogramBuckets} adds the buckets the Grafana dashboard needs; Spring Boot applies it to
 * Prometheus registries only.
 *
 * <p>Without a {@link MicrometerGpuListener} (a context opened without it) the gauges and counters
 * still work; {@code gpu.kernel.duration}, {@code gpu.streams.acquire} and {@code gpu.streams.usage}
 * then stay at zero. Plain Java use:
 *
 * <pre>{@code
 * MicrometerGpuListener listener = new MicrometerGpuListener();
 * GpuContext context = GpuContext.builder().listener(listener).open();
 * new GpuMetrics(context, listener).bindTo(registry);
 * }</pre>
 */
public final class GpuMetrics implements MeterBinder {

	/** Kernel launches, by {@value #TAG_KERNEL} and {@value #TAG_OUTCOME}. */
	public static final String KERNEL_LAUNCHES = "gpu.kernel.launches";

	/** Device time of timed launches, by {@value #TAG_KERNEL}. */
	public static final String KERNEL_DURATION = "gpu.kernel.duration";

	/**
	 * Kernel loads that waited for work in flight ({@link KernelLoad#waited()}) and the time of their
	 * load step, by {@value #TAG_KERNEL} and {@value #TAG_TRIGGER}.
	 */
	public static final String KERNEL_LOAD_WAIT = "gpu.kernel.load.wait";

	/** What loaded a kernel: {@code open}, {@code load} or {@code launch} ({@link KernelLoad.Trigger}). */
	public static final String TAG_TRIGGER = "trigger";

	/** Leased streams. */
	public static final String STREAMS_ACTIVE = "gpu.streams.active";

	/** Idle pooled streams. */
	public static final String STREAMS_IDLE = "gpu.streams.idle";

	/** Threads waiting for a lease. */
	public static final String STREAMS_PENDING = "gpu.streams.pending";

	/** The pool's maximum size. */
	public static final String STREAMS_MAX = "gpu.streams.max";

	/** Wait for a lease. */
	public static final String STREAMS_ACQUIRE = "gpu.streams.acquire";

	/** Time a lease is held. */
	public static final String STREAMS_USAGE = "gpu.streams.usage";

	/** Acquisitions that timed out. */
	public static final String STREAMS_TIMEOUT = "gpu.streams.timeout";

	/** Average fraction of recent time the pooled streams had work in flight. */
	public static final String STREAMS_UTILIZATION = "gpu.streams.utilization";

	/** Events not yet destroyed. */
	public static final String EVENTS_LIVE = "gpu.events.live";

	/** Bytes held by the context's device buffers. */
	public static final String MEMORY_USED = "gpu.memory.used";

	/** The device's memory (or the CPU backend's budget). */
	public static final String MEMORY_TOTAL = "gpu.memory.total";

	/** Bytes the context holds from the device for reuse but no buffer uses (CUDA's caching allocator). */
	public static final String MEMORY_CACHED = "gpu.memory.cached";

	/** Bytes of page-locked staging memory that array and buffer copies hold now. */
	public static final String STAGING_USED = "gpu.staging.used";

	/** The most staging copies may hold at once ({@code gpu.copies.staging-budget}). */
	public static final String STAGING_BUDGET = "gpu.staging.budget";

	/** Copies waiting for room in the staging budget. */
	public static final String STAGING_PENDING = "gpu.staging.pending";

	/** Copies that gave up waiting for staging. */
	public static final String STAGING_TIMEOUT = "gpu.staging.timeout";

	/** Items per dispatched batch, by {@value #TAG_BATCHER}. */
	public static final String BATCH_SIZE = "gpu.batch.size";

	/** Time an item waited in its batcher's queue before dispatch, by {@value #TAG_BATCHER}. */
	public static final String BATCH_WAIT = "gpu.batch.wait";

	/** Items waiting in a batcher's queue, by {@value #TAG_BATCHER}. */
	public static final String BATCH_QUEUED = "gpu.batch.queued";

	/** Items refused because a batcher's queue was full, by {@value #TAG_BATCHER}. */
	public static final String BATCH_REJECTED = "gpu.batch.rejected";

	/** Items that timed out in a batcher's queue, by {@value #TAG_BATCHER}. */
	public static final String BATCH_TIMEOUTS = "gpu.batch.timeouts";

	/** Tag: the batcher's name. */
	public static final String TAG_BATCHER = "batcher";

	/** Tag: device ordinal. */
	public static final String TAG_GPU = "gpu";

	/** Tag: device UUID. */
	public static final String TAG_UUID = "uuid";

	/** Tag: backend, lower case. */
	public static final String TAG_BACKEND = "backend";

	/** Tag: kernel name, from the context's kernel registry. */
	public static final String TAG_KERNEL = "kernel";

	/** Tag: {@value #OUTCOME_SUCCESS} or {@value #OUTCOME_ERROR}. */
	public static final String TAG_OUTCOME = "outcome";

	/** Outcome of a launch that was enqueued. */
	public static final String OUTCOME_SUCCESS = "success";

	/** Outcome of a launch that was rejected or failed while running. */
	public static final String OUTCOME_ERROR = "error";

	private final GpuContext context;

	private final MicrometerGpuListener listener;

	private final Iterable<Tag> tags;

	/**
	 * Meters for {@code context}, with {@code listener} as the source of the timers.
	 * @param context the context to observe
	 * @param listener the listener the context was opened with, or {@code null} when it has none
	 */
	public GpuMetrics(GpuContext context, MicrometerGpuListener listener) {
		this(context, listener, Tags.empty());
	}

	/**
	 * Meters for {@code context} with extra tags on every meter.
	 * @param context the context to observe
	 * @param listener the listener the context was opened with, or {@code null} when it has none
	 * @param extraTags tags added to every meter
	 */
	public GpuMetrics(GpuContext context, MicrometerGpuListener listener, Iterable<Tag> extraTags) {
		this.context = context;
		this.listener = listener;
		this.tags = Tags.concat(extraTags, deviceTags(context.device()));
	}

	/** The tags every meter of {@code device} carries: {@code gpu}, {@code backend}, {@code uuid}. */
	public static Tags deviceTags(DeviceInfo device) {
		Tags tags = Tags.of(TAG_GPU, Integer.toString(device.ordinal()), TAG_BACKEND,
				device.backend().name().toLowerCase(Locale.ROOT));
		String uuid = device.uuid();
		return tags.and(TAG_UUID, (uuid != null && !uuid.isEmpty()) ? uuid : "none");
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		StreamPool pool = this.context.streams();
		Gauge.builder(STREAMS_ACTIVE, pool, StreamPool::active)
			.description("Pooled GPU streams leased now")
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STREAMS_IDLE, pool, (p) -> p.stats().idle())
			.description("Pooled GPU streams idle in the pool")
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STREAMS_PENDING, pool, (p) -> p.stats().pending())
			.description("Threads waiting for a GPU stream lease")
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STREAMS_MAX, pool, StreamPool::maxSize)
			.description("Most streams the GPU stream pool will create")
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STREAMS_UTILIZATION, pool, (p) -> p.stats().utilization())
			.description("Average fraction of recent time the pooled GPU streams had work in flight (0..1)")
			.tags(this.tags)
			.register(registry);
		FunctionCounter.builder(STREAMS_TIMEOUT, pool, (p) -> p.stats().timeouts())
			.description("GPU stream acquisitions that gave up waiting")
			.tags(this.tags)
			.register(registry);
		EventRegistry events = this.context.events();
		Gauge.builder(EVENTS_LIVE, events, EventRegistry::live)
			.description("GPU events not yet destroyed (in use plus cached for reuse)")
			.tags(this.tags)
			.register(registry);
		Gauge.builder(MEMORY_USED, this.context, (c) -> memory(c, MemoryInfo::usedBytes))
			.description("Device memory held by this context's buffers")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(MEMORY_TOTAL, this.context, (c) -> memory(c, MemoryInfo::totalBytes))
			.description("Device memory in total (the CPU backend's budget on the CPU backend)")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(MEMORY_CACHED, this.context, (c) -> memory(c, MemoryInfo::cachedBytes))
			.description("Device memory held for reuse by the caching allocator but in no buffer")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STAGING_USED, this.context, (c) -> hostMemory(c, HostMemoryInfo::stagingBytes))
			.description("Page-locked staging memory held by copies from and to Java arrays and buffers")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STAGING_BUDGET, this.context, (c) -> hostMemory(c, HostMemoryInfo::stagingBudgetBytes))
			.description("Most staging memory copies may hold at once (gpu.copies.staging-budget)")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STAGING_PENDING, this.context, (c) -> hostMemory(c, HostMemoryInfo::stagingWaiting))
			.description("Copies waiting for room in the staging budget")
			.tags(this.tags)
			.register(registry);
		FunctionCounter.builder(STAGING_TIMEOUT, this.context, (c) -> hostMemory(c, HostMemoryInfo::stagingTimeouts))
			.description("Copies that gave up waiting for staging memory (StagingExhaustedException)")
			.tags(this.tags)
			.register(registry);
		Bound bound = new Bound(registry);
		for (Kernel kernel : this.context.launcher().kernels()) {
			bound.kernelSeen(kernel.name());
		}
		for (GpuBatcher<?, ?> batcher : this.context.batchers()) {
			bound.batcherOpened(batcher.name());
		}
		if (this.listener != null) {
			this.listener.add(bound);
		}
		if (this.context instanceof dev.gpucompute.graph.GpuGraphs.Host) {
			new GpuGraphMetrics(this.context, this.listener).bindTo(registry);
		}
	}

	/**
	 * The meters of one batcher name; they follow the batcher of that name now open, and carry the
	 * counts of earlier ones forward so that the counters never go down.
	 */
	static final class BatcherMeters {

		final DistributionSummary size;

		final Timer wait;

		private GpuBatcher<?, ?> batcher;

		private long rejectedBefore;

		private long timeoutsBefore;

		BatcherMeters(DistributionSummary size, Timer wait) {
			this.size = size;
			this.wait = wait;
		}

		synchronized void follow(GpuBatcher<?, ?> next) {
			if (this.batcher != null && this.batcher != next) {
				BatcherStats stats = this.batcher.stats();
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

	private static double memory(GpuContext context, java.util.function.ToLongFunction<MemoryInfo> figure) {
		try {
			return figure.applyAsLong(context.memory());
		}
		catch (ContextClosedException ex) {
			return Double.NaN;
		}
	}

	private static double hostMemory(GpuContext context, java.util.function.ToLongFunction<HostMemoryInfo> figure) {
		try {
			return figure.applyAsLong(context.hostMemory());
		}
		catch (ContextClosedException ex) {
			return Double.NaN;
		}
	}

	/** The meters of one registry that move with listener callbacks. */
	final class Bound {

		private final MeterRegistry registry;

		private final Timer acquire;

		private final Timer usage;

		/** Per-kernel device-time timers; a key exists once the kernel's meters are registered. */
		private final Map<String, Timer> kernels = new ConcurrentHashMap<>();

		/** Per-batcher meters by name; a key exists once its meters are registered. */
		private final Map<String, BatcherMeters> batchers = new ConcurrentHashMap<>();

		Bound(MeterRegistry registry) {
			this.registry = registry;
			this.acquire = Timer.builder(STREAMS_ACQUIRE)
				.description("Time threads waited for a GPU stream lease")
				.tags(GpuMetrics.this.tags)
				.register(registry);
			this.usage = Timer.builder(STREAMS_USAGE)
				.description("Time GPU stream leases were held")
				.tags(GpuMetrics.this.tags)
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
					.tags(GpuMetrics.this.tags)
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
		private Timer register(String name) {
			Kernel kernel;
			try {
				kernel = GpuMetrics.this.context.launcher().kernel(name);
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

		private BatcherMeters batcherMeters(String name) {
			BatcherMeters meters = this.batchers.get(name);
			if (meters == null) {
				batcherOpened(name);
				meters = this.batchers.get(name);
			}
			return meters;
		}

		private GpuBatcher<?, ?> openBatcher(String name) {
			for (GpuBatcher<?, ?> batcher : GpuMetrics.this.context.batchers()) {
				if (batcher.name().equals(name)) {
					return batcher;
				}
			}
			return null;
		}

		private BatcherMeters registerBatcher(String name) {
			Tags batcherTags = Tags.concat(GpuMetrics.this.tags, TAG_BATCHER, name);
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
			Tags kernelTags = Tags.concat(GpuMetrics.this.tags, TAG_KERNEL, kernel.name());
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

	}

}
