package dev.gpucompute.internal.batch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.batch.BatchQueue.Item;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.settings.Limits;

/**
 * The end of a {@link GpuBatcher}: the steps {@link GpuBatcher#close()} and the context's close take
 * for each batcher ({@link Batcher#closeAll}): {@link #shutdown()} stops accepting items and lets
 * the dispatchers run what is queued without holding for fuller batches, {@link #awaitTermination}
 * waits for the queue to empty and the batches to end, and {@link #shutdownNow()} abandons whatever
 * is left, queued or running, with a {@link ContextClosedException} that names the drain timeout.
 *
 * <p>Thread-safe: any thread may call it, at once and more than once. Each step decides under the
 * batcher's lock ({@link BatcherState#lock}); the abandoned futures complete after it is released,
 * so a caller's callback never runs under it. The batcher tells the context it is closed once
 * {@link #shutdownNow()} returns.
 *
 * @param <I> item type
 * @param <O> result type
 */
final class BatchDrain<I, O> {

	private final BatcherState<I, O> state;

	/** Holds the sweep timer, cancelled at close. */
	private final BatchDeadlines<I, O> deadlines;

	private final String name;

	/** The context's: its number names it in the abandoned items' message. */
	private final ContextState lifecycle;

	/** How long close waits for the queue to drain, for the abandoned items' message. */
	private final Duration drainTimeout;

	/**
	 * @param state the batcher's
	 * @param deadlines the batcher's
	 * @param name the batcher's, for messages
	 * @param lifecycle the context's
	 * @param drainTimeout the batcher's drain timeout (its own, else the context's)
	 */
	BatchDrain(BatcherState<I, O> state, BatchDeadlines<I, O> deadlines, String name, ContextState lifecycle,
			Duration drainTimeout) {
		this.state = state;
		this.deadlines = deadlines;
		this.name = name;
		this.lifecycle = lifecycle;
		this.drainTimeout = drainTimeout;
	}

	/** Stops accepting items; wakes the dispatchers (they stop holding) and the waiters. Idempotent. */
	void shutdown() {
		this.state.lock.lock();
		try {
			if (this.state.shutDown()) {
				this.state.work.signalAll();
				this.state.finished.signalAll();
			}
		}
		finally {
			this.state.lock.unlock();
		}
	}

	/**
	 * Waits until, after {@link #shutdown()}, no item is queued and no batch runs any more.
	 * @return whether that happened within {@code timeout}; false at once when not shut down
	 * (interrupted: returns at once, with the interrupt status kept)
	 */
	boolean awaitTermination(Duration timeout) {
		long remaining = Limits.nanos(timeout, "timeout");
		this.state.lock.lock();
		try {
			while (!this.state.isTerminated()) {
				if (remaining <= 0 || this.state.isOpen()) {
					return false;
				}
				remaining = this.state.finished.awaitNanos(remaining);
			}
			return true;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return this.state.isTerminated();
		}
		finally {
			this.state.lock.unlock();
		}
	}

	/**
	 * Stops accepting items and abandons those not finished: queued items and items of running
	 * batches complete exceptionally now (a running handler goes on, but its results are dropped).
	 * Idempotent.
	 * @return the items abandoned (those whose future this completed)
	 */
	int shutdownNow() {
		List<Item<I, O>> queuedItems;
		List<Item<I, O>> runningItems = new ArrayList<>();
		this.state.lock.lock();
		try {
			this.state.shutDown();
			queuedItems = this.state.queue.removeAll();
			for (List<Item<I, O>> batch : this.state.running) {
				runningItems.addAll(batch);
			}
			this.deadlines.cancelSweep();
			this.state.work.signalAll();
			this.state.finished.signalAll();
		}
		finally {
			this.state.lock.unlock();
		}
		String what = "Batcher '" + this.name + "' of GPU context #" + this.lifecycle.id() + " closed before this item ";
		int count = abandon(queuedItems, what + "ran: it was abandoned at close, still queued when the drain timeout of "
				+ this.drainTimeout + " passed");
		count += abandon(runningItems, what + "finished: it was abandoned at close, its batch still running when the "
				+ "drain timeout of " + this.drainTimeout + " passed");
		if (count > 0) {
			this.state.lock.lock();
			try {
				this.state.counters.abandoned(count);
			}
			finally {
				this.state.lock.unlock();
			}
		}
		return count;
	}

	/** Whether {@link #shutdown()} or {@link #shutdownNow()} was called. */
	boolean isShutdown() {
		this.state.lock.lock();
		try {
			return !this.state.isOpen();
		}
		finally {
			this.state.lock.unlock();
		}
	}

	private static <I, O> int abandon(List<Item<I, O>> items, String reason) {
		int count = 0;
		for (Item<I, O> item : items) {
			if (item.future.completeExceptionally(new ContextClosedException(reason))) {
				count++;
			}
		}
		return count;
	}

}
