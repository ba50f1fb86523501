package dev.gpucompute;

import java.time.Duration;
import java.util.List;

/**
 * Records the stream leases, device buffers, events and graphs acquired while it is open, on every
 * {@link GpuContext} of this JVM, with the site that acquired each; then tells which of them are
 * still open and which contexts still have work in flight. For test support (the
 * {@code @GpuLeakCheck} extension of {@code gpu-compute-spring-boot-test} is built on it) and
 * diagnostics; not for production paths.
 *
 * <pre>{@code
 * try (LeakTracker tracker = LeakTracker.start()) {
 *     ... code under test ...
 *     assert tracker.openResources().isEmpty() : tracker.openResources();
 * }
 * }</pre>
 *
 * <p>While any tracker is open, every acquisition records its site (a stack walk, as with
 * {@code leakDetectionThreshold}), so acquisitions cost more; with none open they cost one volatile
 * read more. Resources acquired before {@link #start()} are never reported. Work of every thread is
 * seen, so two tests that run at the same time on the same context see each other's resources.
 *
 * <p>Thread-safe. The caller owns a tracker and closes it; closing stops recording.
 */
public interface LeakTracker extends AutoCloseable {

	/** The kind of a resource the tracker follows. */
	public enum Kind {

		STREAM_LEASE, DEVICE_BUFFER, EVENT,

		/** A captured graph ({@code dev.gpucompute.graph.GpuGraph}). */
		GRAPH

	}

	/**
	 * A resource acquired while the tracker was open and not closed by its holder.
	 *
	 * @param kind what it is
	 * @param description what it is, in words ("Device buffer of 64 bytes on pool-2")
	 * @param context the context it belongs to
	 * @param thread the name of the thread that acquired it
	 * @param acquiredAt a throwable whose stack trace is the acquisition site
	 * @param closedWithContext whether its context was closed while it was still open (the context
	 * released it then; its holder never closed it)
	 */
	public record OpenResource(Kind kind, String description, GpuContext context, String thread, Throwable acquiredAt,
			boolean closedWithContext) {

		@Override
		public String toString() {
			return this.description + " (" + this.context + "), acquired on thread '" + this.thread + "'"
					+ (this.closedWithContext ? ", still open when its context closed" : "");
		}

	}

	/** Starts recording; close the tracker to stop. */
	static LeakTracker start() {
		return GpuContextBuilder.startLeakTracker();
	}

	/**
	 * The resources acquired since {@link #start()} that their holders have not closed: those of
	 * contexts still open, then those whose context closed while they were open. Each with the
	 * site that acquired it.
	 */
	List<OpenResource> openResources();

	/**
	 * Work in flight now on the contexts of this JVM that are open, one line per context that has
	 * some: pooled streams not idle, the calling thread's default stream (or the shared legacy one)
	 * not idle, futures of stream work (copies, {@code completion()}) not complete. A query: nothing
	 * waits. Work on other threads' per-thread default streams is not seen.
	 */
	List<String> pendingWork();

	/**
	 * {@link #pendingWork()}, after waiting up to {@code grace} (polling, every few milliseconds) for
	 * the work in flight to finish: what is still running then. Closing a buffer enqueues its free on
	 * its stream, so a stream is briefly busy after correct code too; a grace of some hundred
	 * milliseconds tells that apart from work nobody waited for.
	 * @throws IllegalArgumentException when {@code grace} is negative
	 */
	List<String> pendingWork(Duration grace);

	/** Stops recording. Idempotent. */
	@Override
	void close();

}
