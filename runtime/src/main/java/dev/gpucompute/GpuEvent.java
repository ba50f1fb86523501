package dev.gpucompute;

import java.time.Duration;

/**
 * A marker in a stream: after {@link #record(GpuStream)}, it completes when the work enqueued on
 * that stream before the record is done. Other streams wait for it with
 * {@link GpuStream#waitFor(GpuEvent)} (without blocking the host); the host waits with
 * {@link #synchronize()}. An event never recorded is complete, as in CUDA. Recording again moves
 * the marker; waits already enqueued keep the record they saw.
 *
 * <p>Created by {@link EventRegistry}; the caller owns it and closes it, which returns it to the
 * registry for reuse. With leak detection on, an event dropped without close is returned by a
 * cleaner and logged with its creation site; without, it stays allocated until the context closes. Methods are thread-safe; after close every method but {@code close} raises
 * {@link GpuException}.
 */
public interface GpuEvent extends AutoCloseable {

	/** Whether this event measures time ({@link EventRegistry#createTiming()}). */
	boolean isTiming();

	/** Whether it has been recorded at least once. */
	boolean isRecorded();

	/** Captures the work enqueued on {@code stream} so far. */
	GpuEvent record(GpuStream stream);

	/**
	 * Blocks the calling thread until the recorded work is done; returns at once when never recorded.
	 * @throws KernelLaunchException when a kernel among the work before the record failed and its
	 * failure was not reported yet (it then counts as reported, as with {@link GpuStream#synchronize()})
	 */
	void synchronize();

	/** Whether the recorded work is done; true when never recorded (also for an event reused from the registry). */
	boolean isComplete();

	/**
	 * Device time between {@code start} and this event, waiting for both to complete.
	 * @throws GpuException when either is not a timing event or was never recorded
	 */
	Duration elapsedSince(GpuEvent start);

	/** Returns the event to the registry. Idempotent; a no-op after the context closed. */
	void close();

}
