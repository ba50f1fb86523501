package dev.gpucompute.autoconfigure.metrics;

import dev.gpucompute.listener.KernelLoad;

/**
 * The names of the GPU meters, of their tags and of the tags' fixed values: the names of
 * docs/observability.md, "Meters", which dashboards and alerts query. {@link GpuMetrics} registers the
 * meters (its Javadoc says each one's type and source); the observation convention of kernel launches
 * uses the same tag names.
 *
 * <p>Constants only.
 */
public final class GpuMeterNames {

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

	/** Graph launches and replays. */
	public static final String GRAPH_REPLAYS = "gpu.graph.replays";

	/** Graphs not closed yet. */
	public static final String GRAPH_LIVE = "gpu.graph.live";

	/** Operations (kernel launches, copies, fills) in the live graphs. */
	public static final String GRAPH_NODES = "gpu.graph.nodes";

	/** Captures, by {@value #TAG_OUTCOME}: {@code success} or {@code failed}. */
	public static final String GRAPH_CAPTURES = "gpu.graph.captures";

	/** Updates of a graph by a new capture, by {@value #TAG_OUTCOME}: {@code in_place} or {@code reinstantiated}. */
	public static final String GRAPH_UPDATES = "gpu.graph.updates";

	/** Capture time, by {@value #TAG_GRAPH}. */
	public static final String GRAPH_CAPTURE = "gpu.graph.capture";

	/** Instantiation or update time, by {@value #TAG_GRAPH}. */
	public static final String GRAPH_INSTANTIATE = "gpu.graph.instantiate";

	/** Tag: the graph's name. */
	public static final String TAG_GRAPH = "graph";

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

	private GpuMeterNames() {
	}

}
