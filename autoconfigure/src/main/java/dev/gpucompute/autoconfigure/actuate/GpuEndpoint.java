package dev.gpucompute.autoconfigure.actuate;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.EventRegistry.EventStats;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.Kernel;
import dev.gpucompute.Kernel.KernelStats;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCache;
import dev.gpucompute.graph.GraphInfo;
import dev.gpucompute.graph.GraphStats;

/**
 * The {@code gpu} Actuator endpoint ({@code /actuator/gpu}): what the GPU contexts are and do now.
 * Read-only: it takes snapshots and changes nothing. Thread-safe.
 *
 * <p>With one device, {@code /actuator/gpu} is that device's report ({@link GpuDescriptor}) and
 * {@code /actuator/gpu/{part}} one part of it: {@code backend}, {@code device}, {@code streams},
 * {@code leases} (the oldest leases held now, with the thread and the stack that acquired each),
 * {@code events}, {@code kernels}, {@code memory}, {@code batchers} (each open batcher's
 * settings and figures, by name) or {@code graphs} (the live graphs, the graph caches and the counts
 * since open). With several devices ({@code gpu.devices}),
 * {@code /actuator/gpu} is {@link DevicesDescriptor}: the primary device's ordinal and every device's
 * report keyed by ordinal, and {@code /actuator/gpu/{part}} that part of every device, keyed by
 * ordinal. Whatever the number of devices, {@code /actuator/gpu/devices} has every device's report
 * keyed by ordinal, {@code /actuator/gpu/devices/{ordinal}} one device's report and
 * {@code /actuator/gpu/devices/{ordinal}/{part}} one part of it; an unknown device or part answers
 * 404.
 */
@Endpoint(id = "gpu", defaultAccess = Access.READ_ONLY)
public class GpuEndpoint {

	/** The selector of the per-device reports. */
	private static final String DEVICES = "devices";

	/** The parts of a device's report. */
	private static final Set<String> PARTS = Set.of("backend", "device", "streams", "leases", "events", "kernels",
			"memory", "batchers", "graphs");

	/** How many of the oldest leases the report lists. */
	static final int LEASES_SHOWN = 16;

	private final List<GpuContext> contexts;

	/**
	 * An endpoint reporting on {@code context}.
	 * @param context the context to report on; not closed by the endpoint
	 */
	public GpuEndpoint(GpuContext context) {
		this.contexts = List.of(context);
	}

	/**
	 * An endpoint reporting on every device of {@code devices}.
	 * @param devices the devices to report on; not closed by the endpoint
	 */
	public GpuEndpoint(GpuDevices devices) {
		this.contexts = devices.contexts();
	}

	/**
	 * Everything: with one device its backend, device, stream pool, events, kernels and memory
	 * ({@link GpuDescriptor}); with several, the same for each ({@link DevicesDescriptor}).
	 */
	@ReadOperation
	public Object gpu() {
		if (this.contexts.size() == 1) {
			return report(this.contexts.get(0));
		}
		return new DevicesDescriptor(this.contexts.get(0).device().ordinal(), devices());
	}

	/**
	 * One part of {@link #gpu()}, or {@code devices}: every device's report by ordinal.
	 * @param part {@code backend}, {@code device}, {@code streams}, {@code events}, {@code kernels},
	 * {@code memory}, {@code batchers} or {@code devices}
	 * @return the part (with several devices, the part of each device keyed by ordinal), or
	 * {@code null} (HTTP 404) for an unknown part, or for {@code memory} of a single device once its
	 * context is closed
	 */
	@ReadOperation
	public @Nullable Object part(@Selector String part) {
		String name = part.toLowerCase(Locale.ROOT);
		if (name.equals(DEVICES)) {
			return devices();
		}
		if (this.contexts.size() == 1) {
			return part(this.contexts.get(0), name);
		}
		if (!PARTS.contains(name)) {
			return null;
		}
		Map<Integer, Object> parts = new TreeMap<>();
		for (GpuContext context : this.contexts) {
			parts.put(context.device().ordinal(), part(context, name));
		}
		return parts;
	}

	/**
	 * One device's report: {@code /actuator/gpu/devices/{ordinal}}.
	 * @param devices the literal {@code devices}
	 * @param ordinal the device ordinal
	 * @return the device's report, or {@code null} (HTTP 404) for a device that is not open here
	 */
	@ReadOperation
	public @Nullable GpuDescriptor device(@Selector String devices, @Selector String ordinal) {
		GpuContext context = context(devices, ordinal);
		return (context != null) ? report(context) : null;
	}

	/**
	 * One part of one device's report: {@code /actuator/gpu/devices/{ordinal}/{part}}.
	 * @param devices the literal {@code devices}
	 * @param ordinal the device ordinal
	 * @param part {@code backend}, {@code device}, {@code streams}, {@code events}, {@code kernels}
	 * or {@code memory}
	 * @return the part, or {@code null} (HTTP 404) for an unknown device or part, or for
	 * {@code memory} once the device's context is closed
	 */
	@ReadOperation
	public @Nullable Object devicePart(@Selector String devices, @Selector String ordinal, @Selector String part) {
		GpuContext context = context(devices, ordinal);
		return (context != null) ? part(context, part.toLowerCase(Locale.ROOT)) : null;
	}

	private @Nullable GpuContext context(String devices, String ordinal) {
		if (!DEVICES.equals(devices.toLowerCase(Locale.ROOT))) {
			return null;
		}
		for (GpuContext context : this.contexts) {
			if (Integer.toString(context.device().ordinal()).equals(ordinal.strip())) {
				return context;
			}
		}
		return null;
	}

	private Map<Integer, GpuDescriptor> devices() {
		Map<Integer, GpuDescriptor> devices = new TreeMap<>();
		for (GpuContext context : this.contexts) {
			devices.put(context.device().ordinal(), report(context));
		}
		return devices;
	}

	private static GpuDescriptor report(GpuContext context) {
		return new GpuDescriptor(backend(context), context.device(), context.streams().stats(), leases(context),
				context.events().stats(), kernels(context), memory(context), batchers(context), graphs(context));
	}

	private static @Nullable Object part(GpuContext context, String part) {
		return switch (part) {
			case "backend" -> backend(context);
			case "device" -> context.device();
			case "streams" -> context.streams().stats();
			case "leases" -> leases(context);
			case "events" -> context.events().stats();
			case "kernels" -> kernels(context);
			case "memory" -> memory(context);
			case "batchers" -> batchers(context);
			case "graphs" -> graphs(context);
			default -> null;
		};
	}

	private static BackendDescriptor backend(GpuContext context) {
		String problem = context.healthProblem();
		return new BackendDescriptor(context.backend(), context.backendReason(), problem == null, problem,
				context.kernelTiming(), context.defaultStreamMode());
	}

	private static List<LeaseDescriptor> leases(GpuContext context) {
		return context.streams()
			.leases()
			.stream()
			.limit(LEASES_SHOWN)
			.map((lease) -> new LeaseDescriptor(lease.stream(), lease.priority(), lease.held().toMillis(), lease.thread(),
					lease.site().stream().map(StackTraceElement::toString).toList()))
			.toList();
	}

	private static Map<String, KernelDescriptor> kernels(GpuContext context) {
		Map<String, KernelDescriptor> kernels = new TreeMap<>();
		for (Kernel kernel : context.launcher().kernels()) {
			KernelStats stats = kernel.stats();
			kernels.put(kernel.name(), new KernelDescriptor(stats.launches(), stats.errors(), stats.timedLaunches(),
					stats.deviceTime().toNanos(), stats.meanDeviceTime().toNanos()));
		}
		return kernels;
	}

	private static Map<String, BatcherDescriptor> batchers(GpuContext context) {
		Map<String, BatcherDescriptor> batchers = new TreeMap<>();
		for (GpuBatcher<?, ?> batcher : GpuBatcher.openBatchers(context)) {
			batchers.put(batcher.name(), new BatcherDescriptor(batcher.maxBatchSize(), batcher.maxQueueDelay().toNanos(),
					batcher.maxQueued(), batcher.priority(), batcher.timeout().toNanos(), batcher.maxConcurrentBatches(),
					batcher.stats()));
		}
		return batchers;
	}

	private static @Nullable GraphsDescriptor graphs(GpuContext context) {
		if (!(context instanceof GpuGraphs.Host)) {
			return null;
		}
		GpuGraphs graphs = GpuGraphs.of(context);
		Map<String, GraphCacheDescriptor> caches = new TreeMap<>();
		for (GraphCache<?> cache : graphs.caches()) {
			caches.put(cache.name(), new GraphCacheDescriptor(cache.maxSize(), cache.stats()));
		}
		return new GraphsDescriptor(graphs.stats(), graphs.graphs(), caches);
	}

	private static GpuContext.@Nullable MemoryInfo memory(GpuContext context) {
		try {
			return context.memory();
		}
		catch (ContextClosedException ex) {
			return null;
		}
	}

	/**
	 * The whole report with several devices.
	 *
	 * @param primary the ordinal of the primary device (the one the single-device beans use)
	 * @param devices every device's report, by ordinal
	 */
	public record DevicesDescriptor(int primary, Map<Integer, GpuDescriptor> devices) {
	}

	/**
	 * The whole report of one device.
	 *
	 * @param backend the backend and the context's state
	 * @param device the device
	 * @param streams the stream pool, with each pooled stream's busy share
	 * @param leases the oldest leases held now (at most 16), the oldest first
	 * @param events the event registry
	 * @param kernels loaded kernels by name
	 * @param memory device memory, {@code null} once the context is closed
	 * @param batchers the open batchers by name
	 * @param graphs the graphs: counts, the live ones, the caches
	 */
	public record GpuDescriptor(BackendDescriptor backend, DeviceInfo device, StreamPool.PoolStats streams,
			List<LeaseDescriptor> leases, EventStats events, Map<String, KernelDescriptor> kernels,
			GpuContext.@Nullable MemoryInfo memory, Map<String, BatcherDescriptor> batchers,
			@Nullable GraphsDescriptor graphs) {
	}

	/**
	 * The graphs of one device ({@code dev.gpucompute.graph}).
	 *
	 * @param stats counts since the context opened: live graphs, captures, failed captures, replays,
	 * updates in place and new instantiations, operations in the live graphs
	 * @param live the live graphs, oldest first: name, operations, replays, updates, capture and
	 * instantiation time, the capturing thread
	 * @param caches the open graph caches by name
	 */
	public record GraphsDescriptor(GraphStats stats, List<GraphInfo> live, Map<String, GraphCacheDescriptor> caches) {
	}

	/**
	 * One graph cache.
	 *
	 * @param maxSize the most graphs it keeps
	 * @param stats hits, misses (captures), evictions and its size now
	 */
	public record GraphCacheDescriptor(int maxSize, GraphCache.Stats stats) {
	}

	/**
	 * A stream lease held now.
	 *
	 * @param stream the leased stream
	 * @param priority its priority
	 * @param heldMillis how long it has been held, in milliseconds
	 * @param thread the thread that acquired it
	 * @param site where it was acquired, innermost frame first; empty when leak detection is off
	 */
	public record LeaseDescriptor(String stream, StreamPriority priority, long heldMillis, String thread,
			List<String> site) {
	}

	/**
	 * One batcher: its settings ({@code gpu.batching.<name>.*}) and figures.
	 *
	 * @param maxBatchSize most items per batch
	 * @param maxQueueDelayNanos longest hold of an item while other batches run, in nanoseconds
	 * @param maxQueued most items waiting
	 * @param priority the priority of its stream leases
	 * @param timeoutNanos deadline of an item in the queue, in nanoseconds; 0 for none
	 * @param maxConcurrentBatches most batches run at once
	 * @param stats queued, running and the counts since it was built
	 */
	public record BatcherDescriptor(int maxBatchSize, long maxQueueDelayNanos, int maxQueued, StreamPriority priority,
			long timeoutNanos, int maxConcurrentBatches, GpuBatcher.BatcherStats stats) {
	}

	/**
	 * The backend and the context's state.
	 *
	 * @param backend the backend in use
	 * @param reason why it was chosen
	 * @param healthy whether the context is open and has not hit a sticky error
	 * @param problem why it is unhealthy, {@code null} when healthy
	 * @param kernelTiming how launches are timed ({@code gpu.metrics.kernel-timing})
	 * @param defaultStream the default-stream mode
	 */
	public record BackendDescriptor(Backend backend, String reason, boolean healthy, @Nullable String problem,
			KernelTiming kernelTiming, DefaultStreamMode defaultStream) {
	}

	/**
	 * Launch figures of one kernel.
	 *
	 * @param launches launches enqueued
	 * @param errors launches rejected by the backend plus kernels that failed while running
	 * @param timedLaunches launches whose device time was measured
	 * @param deviceTimeNanos total device time of the timed launches, in nanoseconds
	 * @param meanDeviceTimeNanos mean device time of a timed launch, in nanoseconds
	 */
	public record KernelDescriptor(long launches, long errors, long timedLaunches, long deviceTimeNanos,
			long meanDeviceTimeNanos) {
	}

}
