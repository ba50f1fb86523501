package dev.gpucompute.internal.launch;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import dev.gpucompute.internal.stream.Events;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The device time of launches: which launches are timed ({@link KernelTiming}), the two events that
 * bracket each timed one, and the reading of those events later, off the launching thread, so that a
 * timed launch costs two event records and no callback or thread hop.
 *
 * <p>Thread-safe: launches start and end timings on any thread; the context's housekeeping thread
 * drains them, and close drains the rest once the device is idle. A kernel's sample counter is a
 * plain field, so under concurrent launches of one kernel the sampling is approximate, which is all
 * {@link KernelTiming#SAMPLED} promises.
 */
final class LaunchTimings {

	private final KernelTiming timing;

	private final Events events;

	private final GpuListener listener;

	private final ConcurrentLinkedQueue<PendingTiming> pending = new ConcurrentLinkedQueue<>();

	/** Size of {@link #pending}, which a queue does not know cheaply. */
	private final AtomicInteger pendingCount = new AtomicInteger();

	LaunchTimings(KernelTiming timing, Events events, GpuListener listener) {
		this.timing = timing;
		this.events = events;
		this.listener = listener;
	}

	/**
	 * Records the start event of a launch of {@code kernel} on {@code target} when this launch is to be
	 * timed: every launch with {@code ALL}, one in {@link KernelTiming#SAMPLE_EVERY} with
	 * {@code SAMPLED} while fewer than {@link KernelTiming#MAX_SAMPLES_IN_FLIGHT} wait to be read.
	 * @return the start event, to be given to {@link #end} or {@link #abandon}; {@code null} when the
	 * launch is not timed
	 */
	@Nullable NativeEvent start(KernelHandle kernel, NativeStream target) {
		boolean timed = this.timing == KernelTiming.ALL
				|| (this.timing == KernelTiming.SAMPLED && (kernel.sampleCounter++ % KernelTiming.SAMPLE_EVERY) == 0
						&& this.pendingCount.get() < KernelTiming.MAX_SAMPLES_IN_FLIGHT);
		if (!timed) {
			return null;
		}
		NativeEvent start = this.events.acquireNative(true);
		start.record(target);
		return start;
	}

	/** Gives back the start event of a launch that failed to enqueue ({@code null}: not timed). */
	void abandon(@Nullable NativeEvent start) {
		if (start != null) {
			this.events.releaseNative(start);
		}
	}

	/** Records the end event after the launch and leaves both to {@link #drain}. */
	void end(KernelHandle kernel, NativeStream target, NativeEvent start) {
		NativeEvent end = this.events.acquireNative(true);
		end.record(target);
		this.pendingCount.incrementAndGet();
		this.pending.add(new PendingTiming(kernel, start, end));
	}

	/**
	 * Reports the device time of timed launches whose end event has completed and returns their
	 * events. Called periodically by the context's housekeeping thread, and once at close after the
	 * device has drained ({@code all}: also gives back the events of launches that did not finish).
	 */
	void drain(boolean all) {
		for (var iterator = this.pending.iterator(); iterator.hasNext();) {
			PendingTiming timing = iterator.next();
			boolean done;
			try {
				done = timing.end.query();
			}
			catch (RuntimeException ex) {
				done = false; // a device failure; the launch reports it at its stream's synchronisation
			}
			if (!done && !all) {
				continue;
			}
			iterator.remove();
			this.pendingCount.decrementAndGet();
			try {
				if (done) {
					long nanos = Math.round(timing.end.elapsedMillisSince(timing.start) * 1_000_000d);
					timing.kernel.timedLaunches.increment();
					timing.kernel.timedNanos.add(nanos);
					this.listener.kernelTimed(timing.kernel.name(), nanos);
				}
			}
			catch (RuntimeException ex) {
				// Timing is best effort: a failed kernel has no meaningful device time.
			}
			finally {
				this.events.releaseNative(timing.start);
				this.events.releaseNative(timing.end);
			}
		}
	}

	/** A timed launch whose device time has not been read yet. */
	private record PendingTiming(KernelHandle kernel, NativeEvent start, NativeEvent end) {
	}

}
