package dev.gpucompute.internal.batch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

import dev.gpucompute.batch.BatchTimeoutException;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.batch.BatchQueue.Item;

/**
 * The items of a {@link GpuBatcher} that leave its queue without running while it is open: those
 * whose deadline passed, timed out by a sweep when the deadline comes (not when a dispatcher is next
 * free), and those whose caller cancelled the future. Owns the batcher's one {@link SweepTimer}.
 *
 * <p>Threading: the sweep runs on the context's housekeeping thread, {@link #cancelled} on the thread
 * that cancels a future; both decide under the batcher's lock ({@link BatcherState#lock}) and the
 * sweep completes the futures on the context's completion threads, never under the lock.
 * {@link #scheduleBy} and {@link #cancelSweep} are called with the lock held; {@link #expire} without it.
 *
 * @param <I> item type
 * @param <O> result type
 */
final class BatchDeadlines<I, O> {

	private final BatcherState<I, O> state;

	private final String name;

	/** Completes the futures of the items a sweep timed out (the context's completion threads). */
	private final Executor completions;

	/** Runs {@link #sweep()} by the earliest deadline of the queued items. */
	private final SweepTimer sweeps;

	/**
	 * @param state the batcher's, whose lock guards the queue and the timer
	 * @param name the batcher's, for the timeout's message
	 * @param housekeeping times the sweeps
	 * @param completions runs the completion of timed-out futures
	 */
	BatchDeadlines(BatcherState<I, O> state, String name, ScheduledExecutorService housekeeping, Executor completions) {
		this.state = state;
		this.name = name;
		this.completions = completions;
		this.sweeps = new SweepTimer(housekeeping, this::sweep);
	}

	/** Makes sure a sweep runs by {@code deadline}; with the lock held. */
	void scheduleBy(long deadline) {
		this.sweeps.scheduleBy(deadline);
	}

	/** Cancels the scheduled sweep, if any (at close); with the lock held. */
	void cancelSweep() {
		this.sweeps.cancel();
	}

	/**
	 * Times out the queued items whose deadline passed, so that their callers learn it when it
	 * happens, not when a dispatcher is next free. Runs on the context's housekeeping thread; the
	 * futures complete on its completion threads.
	 */
	void sweep() {
		List<Item<I, O>> expiredNow = new ArrayList<>();
		long now = System.nanoTime();
		this.state.lock.lock();
		try {
			this.sweeps.fired();
			long next = this.state.queue.removeExpired(now, expiredNow);
			this.state.counters.expired(expiredNow.size());
			if (next != BatchQueue.NONE) {
				this.sweeps.scheduleBy(next);
			}
			if (!expiredNow.isEmpty()) {
				this.state.finished.signalAll();
			}
		}
		finally {
			this.state.lock.unlock();
		}
		if (!expiredNow.isEmpty()) {
			this.completions.execute(() -> expire(expiredNow, now));
		}
	}

	/** Drops an item whose caller cancelled its future, if it is still queued. */
	void cancelled(Item<I, O> item) {
		this.state.lock.lock();
		try {
			if (this.state.queue.remove(item)) {
				this.state.counters.cancelled(1);
				this.state.finished.signalAll();
			}
		}
		finally {
			this.state.lock.unlock();
		}
	}

	/** Completes the futures of items that expired in the queue, as of {@code now}; without the lock. */
	void expire(List<Item<I, O>> items, long now) {
		for (Item<I, O> item : items) {
			item.future.completeExceptionally(new BatchTimeoutException(this.name, Duration.ofNanos(now - item.enqueuedAt)));
		}
	}

}
