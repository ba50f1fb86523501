package dev.gpucompute.autoconfigure.metrics;

import java.util.Locale;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.EventRegistry;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.GpuContext;
import dev.gpucompute.Kernel;
import dev.gpucompute.StreamPool;
import org.jspecify.annotations.Nullable;

import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.EVENTS_LIVE;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.MEMORY_CACHED;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.MEMORY_TOTAL;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.MEMORY_USED;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STAGING_BUDGET;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STAGING_PENDING;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STAGING_TIMEOUT;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STAGING_USED;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_ACTIVE;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_IDLE;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_MAX;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_PENDING;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_TIMEOUT;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.STREAMS_UTILIZATION;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.TAG_BACKEND;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.TAG_GPU;
import static dev.gpucompute.autoconfigure.metrics.GpuMeterNames.TAG_UUID;

/**
 * Binds the meters of one {@link GpuContext} to a {@link MeterRegistry}: the names ({@link GpuMeterNames}),
 * types and tags of docs/observability.md, "Meters". The gauges and function counters read the
 * context's own figures when the registry polls them; the timers, the distribution summary and the
 * meters of kernels and batchers that appear later are fed by the context's {@link MicrometerGpuListener},
 * which binding hands the registry's meters to.
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

	private final GpuContext context;

	private final @Nullable MicrometerGpuListener listener;

	private final Iterable<Tag> tags;

	/**
	 * Meters for {@code context}, with {@code listener} as the source of the timers.
	 * @param context the context to observe
	 * @param listener the listener the context was opened with, or {@code null} when it has none
	 */
	public GpuMetrics(GpuContext context, @Nullable MicrometerGpuListener listener) {
		this(context, listener, Tags.empty());
	}

	/**
	 * Meters for {@code context} with extra tags on every meter.
	 * @param context the context to observe
	 * @param listener the listener the context was opened with, or {@code null} when it has none
	 * @param extraTags tags added to every meter
	 */
	public GpuMetrics(GpuContext context, @Nullable MicrometerGpuListener listener, Iterable<Tag> extraTags) {
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
		Gauge.builder(MEMORY_USED, this.context, (c) -> memory(c, GpuContext.MemoryInfo::usedBytes))
			.description("Device memory held by this context's buffers")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(MEMORY_TOTAL, this.context, (c) -> memory(c, GpuContext.MemoryInfo::totalBytes))
			.description("Device memory in total (the CPU backend's budget on the CPU backend)")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(MEMORY_CACHED, this.context, (c) -> memory(c, GpuContext.MemoryInfo::cachedBytes))
			.description("Device memory held for reuse by the caching allocator but in no buffer")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STAGING_USED, this.context, (c) -> hostMemory(c, GpuContext.HostMemoryInfo::stagingBytes))
			.description("Page-locked staging memory held by copies from and to Java arrays and buffers")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STAGING_BUDGET, this.context, (c) -> hostMemory(c, GpuContext.HostMemoryInfo::stagingBudgetBytes))
			.description("Most staging memory copies may hold at once (gpu.copies.staging-budget)")
			.baseUnit(BaseUnits.BYTES)
			.tags(this.tags)
			.register(registry);
		Gauge.builder(STAGING_PENDING, this.context, (c) -> hostMemory(c, GpuContext.HostMemoryInfo::stagingWaiting))
			.description("Copies waiting for room in the staging budget")
			.tags(this.tags)
			.register(registry);
		FunctionCounter.builder(STAGING_TIMEOUT, this.context, (c) -> hostMemory(c, GpuContext.HostMemoryInfo::stagingTimeouts))
			.description("Copies that gave up waiting for staging memory (StagingExhaustedException)")
			.tags(this.tags)
			.register(registry);
		ListenerMeters pushed = new ListenerMeters(this.context, this.tags, registry);
		for (Kernel kernel : this.context.launcher().kernels()) {
			pushed.kernelSeen(kernel.name());
		}
		for (GpuBatcher<?, ?> batcher : GpuBatcher.openBatchers(this.context)) {
			pushed.batcherOpened(batcher.name());
		}
		if (this.listener != null) {
			// The listener existed before the context; from now on it pushes its callbacks to these meters.
			this.listener.add(pushed);
		}
		if (this.context instanceof dev.gpucompute.graph.GpuGraphs.Host) {
			new GpuGraphMetrics(this.context, this.listener).bindTo(registry);
		}
	}

	private static double memory(GpuContext context, java.util.function.ToLongFunction<GpuContext.MemoryInfo> figure) {
		try {
			return figure.applyAsLong(context.memory());
		}
		catch (ContextClosedException ex) {
			return Double.NaN;
		}
	}

	private static double hostMemory(GpuContext context, java.util.function.ToLongFunction<GpuContext.HostMemoryInfo> figure) {
		try {
			return figure.applyAsLong(context.hostMemory());
		}
		catch (ContextClosedException ex) {
			return Double.NaN;
		}
	}

}
