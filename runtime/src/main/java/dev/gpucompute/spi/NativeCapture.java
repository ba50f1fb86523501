package dev.gpucompute.spi;

/**
 * A capture in progress, begun by {@link DeviceBackend#beginCapture} on one stream (its origin).
 * While it lasts, work enqueued on the origin, and on every stream that joined it by waiting for an
 * event recorded in it, is recorded instead of run; {@link NativeStream#capture()} answers this
 * capture for each of them.
 *
 * <p>The context calls {@link #end()} or {@link #abort()} once: on the thread that began the capture,
 * or at the context's close on the closing thread (a capture its thread left open), so a backend must
 * accept the end from any thread (CUDA: the relaxed capture mode; a virtual thread may also go on on
 * another carrier). Either way every stream of the capture leaves it and can be used as before.
 */
public interface NativeCapture {

	/** The stream the capture began on. */
	NativeStream origin();

	/**
	 * Ends the capture and returns what it recorded.
	 * @throws dev.gpucompute.graph.GraphCaptureException with kind {@code UNJOINED} when a stream that
	 * joined the capture has work the origin did not wait for (the capture is discarded and ended
	 * nevertheless), or {@code INVALIDATED} when the backend found the capture broken
	 */
	NativeGraph end();

	/**
	 * Ends the capture and discards what it recorded, also when streams that joined it were not
	 * joined back. Never throws; a backend that cannot end it cleanly logs why.
	 */
	void abort();

}
