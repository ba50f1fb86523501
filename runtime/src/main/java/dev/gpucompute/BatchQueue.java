package dev.gpucompute;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The waiting items of a {@link GpuBatcher}, by batch key, in arrival order within a key: what may
 * form the next batch, which items expired, which are dropped. Not thread-safe: the batcher guards
 * it with its lock, and completes no future while holding it (the methods hand items back instead).
 *
 * @param <I> item type
 * @param <O> result type
 */
final class BatchQueue<I, O> {

	/** No deadline. */
	static final long NONE = Long.MAX_VALUE;

	/** The key of items whose key function gave {@code null}. */
	private static final Object NULL_KEY = new Object();

	/** Items by key; a key is present only while it has items. */
	private final Map<Object, ArrayDeque<Item<I, O>>> queues = new LinkedHashMap<>();

	private int size;

	/** Items waiting. */
	int size() {
		return this.size;
	}

	/** Adds an item behind the others of its key; returns how many items its key has now. */
	int add(Item<I, O> item) {
		ArrayDeque<Item<I, O>> queue = this.queues.computeIfAbsent(item.key, (k) -> new ArrayDeque<>());
		queue.addLast(item);
		this.size++;
		return queue.size();
	}

	/**
	 * How long until a key has a full batch or the oldest item has waited {@code maxDelayNanos}: zero
	 * when either is the case already. The queue must not be empty.
	 */
	long nanosUntilReady(long now, int maxBatchSize, long maxDelayNanos) {
		long oldest = Long.MAX_VALUE;
		for (ArrayDeque<Item<I, O>> queue : this.queues.values()) {
			if (queue.size() >= maxBatchSize) {
				return 0;
			}
			oldest = Math.min(oldest, queue.peekFirst().enqueuedAt);
		}
		return Math.max(0, maxDelayNanos - (now - oldest));
	}

	/** The most items one key has. */
	int largestKey() {
		int largest = 0;
		for (ArrayDeque<Item<I, O>> queue : this.queues.values()) {
			largest = Math.max(largest, queue.size());
		}
		return largest;
	}

	/**
	 * Takes the next batch: up to {@code maxBatchSize} items of the key whose oldest item is the
	 * oldest. Items whose future is done already (cancelled or completed by the caller) go to
	 * {@code dropped}, items past their deadline to {@code expired}; neither is in the batch.
	 */
	List<Item<I, O>> take(long now, int maxBatchSize, List<Item<I, O>> dropped, List<Item<I, O>> expired) {
		List<Item<I, O>> batch = new ArrayList<>();
		while (batch.isEmpty() && this.size > 0) {
			Map.Entry<Object, ArrayDeque<Item<I, O>>> oldest = null;
			for (Map.Entry<Object, ArrayDeque<Item<I, O>>> entry : this.queues.entrySet()) {
				if (oldest == null || entry.getValue().peekFirst().enqueuedAt < oldest.getValue().peekFirst().enqueuedAt) {
					oldest = entry;
				}
			}
			ArrayDeque<Item<I, O>> queue = oldest.getValue();
			Item<I, O> item;
			while (batch.size() < maxBatchSize && (item = queue.pollFirst()) != null) {
				this.size--;
				item.queued = false;
				if (item.future.isDone()) {
					dropped.add(item);
				}
				else if (item.deadline <= now) {
					expired.add(item);
				}
				else {
					batch.add(item);
				}
			}
			if (queue.isEmpty()) {
				this.queues.remove(oldest.getKey());
			}
		}
		return batch;
	}

	/**
	 * Removes the items past their deadline into {@code expired}.
	 * @return the earliest deadline of the items left, or {@link #NONE}
	 */
	long removeExpired(long now, List<Item<I, O>> expired) {
		long next = NONE;
		for (Iterator<ArrayDeque<Item<I, O>>> queues = this.queues.values().iterator(); queues.hasNext();) {
			ArrayDeque<Item<I, O>> queue = queues.next();
			for (Iterator<Item<I, O>> items = queue.iterator(); items.hasNext();) {
				Item<I, O> item = items.next();
				if (item.deadline <= now) {
					items.remove();
					item.queued = false;
					this.size--;
					expired.add(item);
				}
				else {
					next = Math.min(next, item.deadline);
				}
			}
			if (queue.isEmpty()) {
				queues.remove();
			}
		}
		return next;
	}

	/** Removes an item if it still waits; false when it was taken or removed already. */
	boolean remove(Item<I, O> item) {
		if (!item.queued) {
			return false;
		}
		ArrayDeque<Item<I, O>> queue = this.queues.get(item.key);
		queue.remove(item);
		if (queue.isEmpty()) {
			this.queues.remove(item.key);
		}
		item.queued = false;
		this.size--;
		return true;
	}

	/** Removes and returns every waiting item. */
	List<Item<I, O>> removeAll() {
		List<Item<I, O>> all = new ArrayList<>(this.size);
		for (ArrayDeque<Item<I, O>> queue : this.queues.values()) {
			for (Item<I, O> item : queue) {
				item.queued = false;
				all.add(item);
			}
		}
		this.queues.clear();
		this.size = 0;
		return all;
	}

	/**
	 * One submitted item and its future.
	 *
	 * @param <I> item type
	 * @param <O> result type
	 */
	static final class Item<I, O> {

		final I value;

		final Object key;

		final long enqueuedAt;

		final long deadline;

		final ItemFuture<O> future;

		/** Whether the item waits in a queue; guarded by the batcher's lock. */
		boolean queued = true;

		/**
		 * @param key the batch key ({@code null} is a key like any other)
		 * @param onCancel told when the caller cancels the future
		 */
		Item(I value, Object key, long enqueuedAt, long deadline, Consumer<Item<I, O>> onCancel) {
			this.value = value;
			this.key = (key != null) ? key : NULL_KEY;
			this.enqueuedAt = enqueuedAt;
			this.deadline = deadline;
			this.future = new ItemFuture<>(() -> onCancel.accept(this));
		}

		/** The batch key as the key function gave it. */
		Object key() {
			return (this.key == NULL_KEY) ? null : this.key;
		}

	}

	/**
	 * The future handed to the caller: cancelling it tells the batcher, which drops the item from the
	 * queue at once.
	 *
	 * @param <O> result type
	 */
	static final class ItemFuture<O> extends CompletableFuture<O> {

		private final Runnable onCancel;

		ItemFuture(Runnable onCancel) {
			this.onCancel = onCancel;
		}

		@Override
		public boolean cancel(boolean mayInterruptIfRunning) {
			boolean done = super.cancel(mayInterruptIfRunning);
			if (done) {
				this.onCancel.run();
			}
			return done;
		}

		/** Dependent stages are plain futures: cancelling one of them cancels nothing here. */
		@Override
		public <U> CompletableFuture<U> newIncompleteFuture() {
			return new CompletableFuture<>();
		}

	}

}
