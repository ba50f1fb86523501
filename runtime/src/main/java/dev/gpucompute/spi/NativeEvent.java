package dev.gpucompute.spi;

/** A backend's event handle. An event never recorded counts as complete, as in CUDA. */
public interface NativeEvent {

	boolean timing();

	/** Captures the work enqueued on {@code stream} so far. */
	void record(NativeStream stream);

	/**
	 * Blocks until the captured work is done, then reports the failures among the recording stream's
	 * work up to the record that were not reported yet, as {@link NativeStream#synchronize()} does.
	 */
	void synchronize();

	/** Whether the captured work is done. */
	boolean query();

	/**
	 * Milliseconds between {@code start}'s completion and this event's completion, waiting for both
	 * to complete (without reporting failures: timing is the runtime's own business). Both must be
	 * timing events and recorded.
	 */
	float elapsedMillisSince(NativeEvent start);

	void destroy();

}
