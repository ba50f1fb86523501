package dev.gpucompute.listener;


/**
 * Receives what the runtime does, for metrics (the pattern of HikariCP's {@code IMetricsTracker}).
 * The runtime has no metrics dependency; the Micrometer binding implements this interface.
 *
 * <p>Called synchronously on the thread doing the work (the launching thread, the thread acquiring
 * or releasing a lease) or on the runtime's completion thread (kernel device time). Implementations
 * must be thread-safe, fast and must not throw. Every method has an empty default, and
 * {@link #NONE} is used when nobody listens, so the launch path pays nothing.
 */
public interface GpuListener {

	/** A listener that ignores everything. */
	GpuListener NONE = new GpuListener() {
	};

	/**
	 * A launch was enqueued ({@code success}) or rejected by the backend. Errors found later, at
	 * synchronisation, are reported through {@link #kernelFailed}.
	 */
	default void kernelLaunched(String kernel, boolean success) {
	}

	/** A kernel failed asynchronously and the failure surfaced at a synchronisation. */
	default void kernelFailed(String kernel) {
	}

	/** A timed launch took {@code nanos} of device time (measured with events). */
	default void kernelTimed(String kernel, long nanos) {
	}

	/**
	 * A kernel was loaded into the context: at open, by {@link dev.gpucompute.GpuLauncher#load}, or by the first
	 * launch of a {@link dev.gpucompute.KernelSource} not loaded yet; {@link KernelLoad#waited()} tells whether it
	 * waited for work in flight (the context also logs that at WARN). Called on the loading thread,
	 * after the load; loads are rare, so the record costs nothing that matters. A load that fails is
	 * not reported here: it throws.
	 */
	default void kernelLoaded(KernelLoad load) {
	}

	/** A lease was granted after waiting {@code waitNanos}. */
	default void leaseAcquired(long waitNanos) {
	}

	/** A lease was returned after being held {@code heldNanos}. */
	default void leaseReleased(long heldNanos) {
	}

	/** An acquisition gave up after {@code waitNanos}. */
	default void leaseTimedOut(long waitNanos) {
	}

	/** A {@link dev.gpucompute.batch.GpuBatcher} of this context was built; its meters can be registered now. */
	default void batcherOpened(String batcher) {
	}

	/** A batcher handed a batch of {@code size} items to its handler. */
	default void batchDispatched(String batcher, int size) {
	}

	/** An item of a batcher was dispatched after waiting {@code waitNanos} in its queue. */
	default void batchItemWaited(String batcher, long waitNanos) {
	}

	/**
	 * A capture ended and was instantiated as a new graph ({@code dev.gpucompute.graph}): {@code nodes}
	 * operations, captured in {@code captureNanos} (from its beginning to its end, the issuing of the
	 * work included) and instantiated in {@code instantiateNanos}. Called on the capturing thread.
	 */
	default void graphCaptured(String graph, int nodes, long captureNanos, long instantiateNanos) {
	}

	/**
	 * A new capture was applied to an existing graph, in place ({@code inPlace}) or by instantiating it
	 * anew (the backend refused the update), in {@code nanos}. Called on the capturing thread.
	 */
	default void graphUpdated(String graph, boolean inPlace, long nanos) {
	}

	/**
	 * A capture ended without a graph: an operation was refused ({@code reason} is the refusal's kind,
	 * e.g. {@code HOST_WAIT}), a stream was not joined back ({@code UNJOINED}), or it was closed without
	 * being ended ({@code DISCARDED}).
	 */
	default void graphCaptureFailed(String graph, String reason) {
	}

	/** A graph was replayed (enqueued once, as a whole). Called on the replaying thread. */
	default void graphReplayed(String graph) {
	}

}
