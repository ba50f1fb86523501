package dev.gpucompute.internal.batch;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.batch.BatchQueue.Item;
import dev.gpucompute.internal.core.ContextState;
import org.jspecify.annotations.Nullable;

/**
 * How an item gets into a {@link GpuBatcher}: made with its batch key and deadline, then queued, or
 * refused when the batcher is shut down ({@link ContextClosedException}) or its queue is full
 * ({@link BatchQueueFullException} with a retry-after hint from the recent batches); for
 * {@link GpuBatcher#call}, reserved as a batch of one when the batcher is idle. Queuing an item wakes
 * an idle dispatcher when that item may make a batch ready, and makes sure a sweep runs by its deadline.
 *
 * <p>Thread-safe: submitting threads call it at once. Whether an item is accepted, and whether it is
 * queued or runs inline, is decided in one step under the batcher's lock ({@link BatcherState#lock}),
 * together with its booking; the exceptions are made under the lock too (they carry the queue's state
 * of that moment). It completes no future.
 *
 * @param <I> item type
 * @param <O> result type
 */
final class BatchAdmission<I, O> {

	private final BatcherState<I, O> state;

	/** Times the sweep by each item's deadline, and hears of each cancelled future. */
	private final BatchDeadlines<I, O> deadlines;

	/** The context's: whether it is closing, for the refusal's message. */
	private final ContextState lifecycle;

	private final String name;

	private final Function<? super I, ?> keyOf;

	private final int maxBatchSize;

	private final int maxQueued;

	private final int concurrency;

	/**
	 * @param state the batcher's
	 * @param deadlines the batcher's
	 * @param lifecycle the context's
	 * @param name the batcher's, for messages
	 * @param keyOf the batch key of an item
	 * @param maxBatchSize the most items of a batch: a key with that many makes a batch ready
	 * @param maxQueued the most items waiting
	 * @param concurrency the batch slots (dispatch threads), for the inline check and the retry-after hint
	 */
	BatchAdmission(BatcherState<I, O> state, BatchDeadlines<I, O> deadlines, ContextState lifecycle, String name,
			Function<? super I, ?> keyOf, int maxBatchSize, int maxQueued, int concurrency) {
		this.state = state;
		this.deadlines = deadlines;
		this.lifecycle = lifecycle;
		this.name = name;
		this.keyOf = keyOf;
		this.maxBatchSize = maxBatchSize;
		this.maxQueued = maxQueued;
		this.concurrency = concurrency;
	}

	/**
	 * Queues an item that times out {@code timeout} nanoseconds from now ({@link BatchQueue#NONE}: never).
	 * @return its future
	 * @throws BatchQueueFullException when {@code maxQueued} items wait already (nothing is queued)
	 * @throws ContextClosedException when the batcher is shut down
	 * @throws NullPointerException when {@code value} is null
	 */
	CompletableFuture<O> submit(I value, long timeout) {
		Item<I, O> item = newItem(value, timeout);
		this.state.lock.lock();
		try {
			add(item);
		}
		finally {
			this.state.lock.unlock();
		}
		return item.future;
	}

	/**
	 * An item, not queued yet, with its key and its deadline {@code timeout} nanoseconds from now
	 * ({@link BatchQueue#NONE} when there is none or it lies beyond what a {@code nanoTime} holds).
	 * @throws NullPointerException when {@code value} is null
	 */
	Item<I, O> newItem(I value, long timeout) {
		Objects.requireNonNull(value, "item");
		Object key = this.keyOf.apply(value);
		long now = System.nanoTime();
		long deadline = (timeout == BatchQueue.NONE || now + timeout < now) ? BatchQueue.NONE : now + timeout;
		return new Item<>(value, key, now, deadline, this.deadlines::cancelled);
	}

	/**
	 * Admits the item of a {@link GpuBatcher#call}: when the batcher is open and idle (nothing queued,
	 * no batch running, a slot free, not holding for the callers of the last batch) it reserves a slot
	 * and returns the item as a batch of one, taken and booked, for the caller to run; otherwise it
	 * queues the item like a submit and returns null.
	 * @throws BatchQueueFullException when it must queue and {@code maxQueued} items wait already
	 * @throws ContextClosedException when the batcher is shut down
	 */
	@Nullable List<Item<I, O>> runInlineOrQueue(Item<I, O> own) {
		this.state.lock.lock();
		try {
			if (this.state.isOpen() && this.state.queue.size() == 0 && this.state.busy == 0
					&& this.state.inFlight < this.concurrency && !this.state.pacing.holdingAfterBatch(own.enqueuedAt)) {
				own.queued = false;
				List<Item<I, O>> inline = List.of(own);
				this.state.counters.submitted();
				this.state.reserve();
				this.state.started(inline);
				return inline;
			}
			add(own);
			return null;
		}
		finally {
			this.state.lock.unlock();
		}
	}

	/** Queues an item, with the lock held. */
	private void add(Item<I, O> item) {
		if (!this.state.isOpen()) {
			throw closedError();
		}
		if (this.state.queue.size() >= this.maxQueued) {
			this.state.counters.rejected();
			throw new BatchQueueFullException(this.name, this.maxQueued,
					this.state.pacing.retryAfter(this.state.queue.size(), this.concurrency));
		}
		boolean wasEmpty = this.state.queue.size() == 0;
		int ofKey = this.state.queue.add(item);
		this.state.counters.submitted();
		// Waiting dispatchers hold for the oldest item's delay; a new item changes that only when the
		// queue was empty, nothing runs, or its key now fills a batch.
		if (this.state.idleDispatchers > 0 && (wasEmpty || this.state.busy == 0 || ofKey >= this.maxBatchSize)) {
			this.state.work.signal();
		}
		if (item.deadline != BatchQueue.NONE) {
			this.deadlines.scheduleBy(item.deadline);
		}
	}

	private ContextClosedException closedError() {
		return new ContextClosedException("Batcher '" + this.name + "' is closed" + (!this.lifecycle.isOpen()
				? " (its GPU context is closing or closed)" : ""));
	}

}
