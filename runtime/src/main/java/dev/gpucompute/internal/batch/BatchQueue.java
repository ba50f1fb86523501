package dev.gpucompute.internal.batch;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * The waiting items of a {@link dev.gpucompute.batch.GpuBatcher}, by batch key, in arrival order within a key: what may
 * form the next batch, which items expired, which are dropped. Not thread-safe: the batcher guards
 * it with its lock, and completes no future while holding it (the methods hand items back instead).
 *
 * <p>Each key's items are a linked list through the items themselves, and the items that have a
 * deadline are also in one binary min-heap by deadline that knows each item's place in it. So
 * adding an item costs O(log n), taking or dropping one O(log n), and {@link #removeExpired} looks
 * only at the items that expire plus one: the sweep of a batcher with 100,000 queued items of which
 * one expired does not scan the other 99,999 under the batcher's lock. An item leaves the heap
 * whichever way it leaves the queue (taken, expired, cancelled, dropped at close), so the heap never
 * holds more than the queue.
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
	private final Map<Object, KeyQueue<I, O>> queues = new LinkedHashMap<>();

	/** The items with a deadline, earliest first. */
	private final DeadlineHeap<I, O> deadlines;

	private int size;

	/** @param deadlines an empty heap that will hold the items with a deadline */
	BatchQueue(DeadlineHeap<I, O> deadlines) {
		this.deadlines = deadlines;
	}

	/** Items waiting. */
	int size() {
		return this.size;
	}

	/** Adds an item behind the others of its key; returns how many items its key has now. */
	int add(Item<I, O> item) {
		KeyQueue<I, O> queue = this.queues.computeIfAbsent(item.key, (k) -> new KeyQueue<>());
		queue.addLast(item);
		if (item.deadline != NONE) {
			this.deadlines.add(item);
		}
		this.size++;
		return queue.size;
	}

	/**
	 * How long until a key has a full batch or the oldest item has waited {@code maxDelayNanos}: zero
	 * when either is the case already. The queue must not be empty.
	 */
	long nanosUntilReady(long now, int maxBatchSize, long maxDelayNanos) {
		long oldest = Long.MAX_VALUE;
		for (KeyQueue<I, O> queue : this.queues.values()) {
			if (queue.size >= maxBatchSize) {
				return 0;
			}
			oldest = Math.min(oldest, queue.first().enqueuedAt);
		}
		return Math.max(0, maxDelayNanos - (now - oldest));
	}

	/** The most items one key has. */
	int largestKey() {
		int largest = 0;
		for (KeyQueue<I, O> queue : this.queues.values()) {
			largest = Math.max(largest, queue.size);
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
			Map.Entry<Object, KeyQueue<I, O>> oldest = null;
			for (Map.Entry<Object, KeyQueue<I, O>> entry : this.queues.entrySet()) {
				if (oldest == null || entry.getValue().first().enqueuedAt < oldest.getValue().first().enqueuedAt) {
					oldest = entry;
				}
			}
			KeyQueue<I, O> queue = Objects.requireNonNull(oldest, "items queued without a key queue").getValue();
			while (batch.size() < maxBatchSize && queue.head != null) {
				Item<I, O> item = queue.head;
				unlink(queue, item);
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
			if (queue.head == null) {
				this.queues.remove(oldest.getKey());
			}
		}
		return batch;
	}

	/**
	 * Removes the items past their deadline into {@code expired}, earliest deadline first: it looks at
	 * those items and the next one only.
	 * @return the earliest deadline of the items left, or {@link #NONE}
	 */
	long removeExpired(long now, List<Item<I, O>> expired) {
		while (this.deadlines.size() > 0) {
			Item<I, O> earliest = this.deadlines.peek();
			if (earliest.deadline > now) {
				return earliest.deadline;
			}
			KeyQueue<I, O> queue = queueOf(earliest);
			unlink(queue, earliest);
			if (queue.head == null) {
				this.queues.remove(earliest.key);
			}
			expired.add(earliest);
		}
		return NONE;
	}

	/** Removes an item if it still waits; false when it was taken or removed already. */
	boolean remove(Item<I, O> item) {
		if (!item.queued) {
			return false;
		}
		KeyQueue<I, O> queue = queueOf(item);
		unlink(queue, item);
		if (queue.head == null) {
			this.queues.remove(item.key);
		}
		return true;
	}

	/** Removes and returns every waiting item. */
	List<Item<I, O>> removeAll() {
		List<Item<I, O>> all = new ArrayList<>(this.size);
		for (KeyQueue<I, O> queue : this.queues.values()) {
			for (Item<I, O> item = queue.head; item != null;) {
				Item<I, O> next = item.next;
				item.prev = null;
				item.next = null;
				item.heapIndex = -1;
				item.queued = false;
				all.add(item);
				item = next;
			}
		}
		this.queues.clear();
		this.deadlines.clear();
		this.size = 0;
		return all;
	}

	/** The list of a queued item's key: it is in the map while it holds an item. */
	private KeyQueue<I, O> queueOf(Item<I, O> item) {
		return Objects.requireNonNull(this.queues.get(item.key), "a queued item's key has no queue");
	}

	/** Takes {@code item} out of its key's list and out of the heap; the caller drops an emptied key. */
	private void unlink(KeyQueue<I, O> queue, Item<I, O> item) {
		queue.unlink(item);
		if (item.heapIndex >= 0) {
			this.deadlines.remove(item);
		}
		item.queued = false;
		this.size--;
	}

	/**
	 * The items of one key in arrival order, linked through the items.
	 *
	 * @param <I> item type
	 * @param <O> result type
	 */
	private static final class KeyQueue<I, O> {

		@Nullable Item<I, O> head;

		@Nullable Item<I, O> tail;

		int size;

		/** The oldest item; a key's list is in the map only while it holds one. */
		Item<I, O> first() {
			return Objects.requireNonNull(this.head, "an empty key queue is in the map");
		}

		void addLast(Item<I, O> item) {
			item.prev = this.tail;
			item.next = null;
			if (this.tail != null) {
				this.tail.next = item;
			}
			else {
				this.head = item;
			}
			this.tail = item;
			this.size++;
		}

		void unlink(Item<I, O> item) {
			if (item.prev != null) {
				item.prev.next = item.next;
			}
			else {
				this.head = item.next;
			}
			if (item.next != null) {
				item.next.prev = item.prev;
			}
			else {
				this.tail = item.prev;
			}
			item.prev = null;
			item.next = null;
			this.size--;
		}

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

		/** Its neighbours in its key's list while queued; guarded by the batcher's lock. */
		@Nullable Item<I, O> prev;

		@Nullable Item<I, O> next;

		/** Its place in the deadline heap, or -1 when it is not there; guarded by the batcher's lock. */
		int heapIndex = -1;

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
		@Nullable Object key() {
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
