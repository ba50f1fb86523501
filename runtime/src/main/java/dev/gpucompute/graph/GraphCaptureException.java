package dev.gpucompute.graph;

import dev.gpucompute.GpuException;

/**
 * An operation that a graph capture cannot record, or a capture that could not be completed. The
 * message names the operation and says what to do instead; {@link #kind()} tells the cases apart in
 * code. Raised the same way on every backend, before anything reaches the device.
 *
 * <p>When the refused operation was issued by the thread that captures, the capture has been ended
 * and discarded by the time this is thrown: its stream, and the streams that had joined it, can be used
 * as before (and the capture's {@link GraphCapture#end()} then throws, with this as the cause).
 */
public class GraphCaptureException extends GpuException {

	private static final long serialVersionUID = 1L;

	/** What went wrong. */
	public enum Kind {

		/**
		 * A host-side wait on work that is being captured, or by the thread that captures: a stream's
		 * {@code synchronize()}, {@code isIdle()} or {@code completion()}, a wait for a copy's future, an
		 * event's {@code synchronize()}, {@code isComplete()} or {@code elapsedSince}, a device
		 * synchronisation. Captured work does not run until the graph is replayed: wait for the replay.
		 */
		HOST_WAIT,

		/**
		 * A copy from or into a Java array or {@code ByteBuffer}: such copies are staged on the host in
		 * steps, which a graph cannot replay. Copy through a {@code HostBuffer}.
		 */
		STAGED_COPY,

		/** A device or host allocation, or a buffer's free: allocate before the capture, free after it. */
		ALLOCATION,

		/** A kernel load (a first launch of a {@code KernelSource}): load kernels before the capture. */
		KERNEL_LOAD,

		/**
		 * Work for the capture on a stream that is not part of it, or work on a capturing stream from a
		 * thread other than the one that captures (including another thread's first use of a buffer
		 * owned by a stream in the capture, which would order its stream after the capture's work).
		 */
		FOREIGN_STREAM,

		/**
		 * A wait inside the capture for work outside it (an event recorded, or a stream's work enqueued,
		 * outside the capture): order it before the capture begins. Also an event recorded in a capture
		 * used after that capture (it marks a point of the graph, not of a stream).
		 */
		OUTSIDE_DEPENDENCY,

		/**
		 * A capture on a default stream (legacy or per-thread), or a default stream joining a capture:
		 * capture on, and branch into, pooled streams.
		 */
		DEFAULT_STREAM,

		/** A capture begun while the thread, or the stream, already captures. */
		NESTED,

		/** A stream joined the capture and its work was not joined back into the capture's stream. */
		UNJOINED,

		/** The backend found the capture broken by work the runtime did not see (code using native handles). */
		INVALIDATED,

		/** The capture was already ended, or failed earlier (the cause says why). */
		ENDED

	}

	private final Kind kind;

	private final String operation;

	/**
	 * @param kind what went wrong
	 * @param operation the operation refused, in words ("synchronize", "upload from a Java array")
	 * @param message the whole message: the operation, why, and what to do instead
	 */
	public GraphCaptureException(Kind kind, String operation, String message) {
		super(message);
		this.kind = kind;
		this.operation = operation;
	}

	/** Like {@link #GraphCaptureException(Kind, String, String)}, with the failure that caused it. */
	public GraphCaptureException(Kind kind, String operation, String message, Throwable cause) {
		super(message, cause);
		this.kind = kind;
		this.operation = operation;
	}

	/** What went wrong. */
	public Kind kind() {
		return this.kind;
	}

	/** The operation that was refused, in words. */
	public String operation() {
		return this.operation;
	}

}
