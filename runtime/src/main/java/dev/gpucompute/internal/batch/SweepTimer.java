package dev.gpucompute.internal.batch;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * The one timer of a {@link dev.gpucompute.batch.GpuBatcher} that runs its sweep (timing out queued items whose deadline
 * passed) by the earliest deadline, on the context's housekeeping thread. Not thread-safe: the
 * batcher's lock guards it.
 */
final class SweepTimer {

	/** No sweep scheduled. */
	private static final long NONE = BatchQueue.NONE;

	private final ScheduledExecutorService housekeeping;

	private final Runnable sweep;

	private long nextSweep = NONE;

	private @Nullable ScheduledFuture<?> scheduled;

	SweepTimer(ScheduledExecutorService housekeeping, Runnable sweep) {
		this.housekeeping = housekeeping;
		this.sweep = sweep;
	}

	/** Makes sure a sweep runs by {@code deadline}. */
	void scheduleBy(long deadline) {
		if (deadline >= this.nextSweep) {
			return;
		}
		if (this.scheduled != null) {
			this.scheduled.cancel(false);
		}
		this.nextSweep = deadline;
		try {
			this.scheduled = this.housekeeping.schedule(this.sweep, Math.max(0, deadline - System.nanoTime()),
					TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException ex) {
			// The context is closing: dispatchers and the close drop expired items themselves.
			this.scheduled = null;
			this.nextSweep = NONE;
		}
	}

	/** The scheduled sweep runs now: none is scheduled any more. */
	void fired() {
		this.scheduled = null;
		this.nextSweep = NONE;
	}

	/** Cancels the scheduled sweep, if any (at close). */
	void cancel() {
		if (this.scheduled != null) {
			this.scheduled.cancel(false);
			this.scheduled = null;
			this.nextSweep = NONE;
		}
	}

}
