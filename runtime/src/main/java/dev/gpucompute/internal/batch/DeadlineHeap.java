package dev.gpucompute.internal.batch;

import java.util.Arrays;

import dev.gpucompute.internal.batch.BatchQueue.Item;

/**
 * The queued items of a batcher that have a deadline: a binary min-heap by deadline in which each item
 * knows its place, so that any item leaves in O(log n) whichever way it leaves the queue, and the
 * earliest is at hand. {@link BatchQueue} is built with one and keeps it equal to its items with a
 * deadline. Not thread-safe: the batcher's lock guards it with the queue.
 *
 * @param <I> item type
 * @param <O> result type
 */
class DeadlineHeap<I, O> {

	/** The heap, in {@code [0, count)}. */
	@SuppressWarnings("unchecked")
	private Item<I, O>[] items = new Item[16];

	private int count;

	/** Items in the heap. */
	int size() {
		return this.count;
	}

	/** The item with the earliest deadline; the heap must not be empty. */
	Item<I, O> peek() {
		return this.items[0];
	}

	void add(Item<I, O> item) {
		if (this.count == this.items.length) {
			this.items = Arrays.copyOf(this.items, this.count * 2);
		}
		siftUp(this.count++, item);
	}

	/** Takes out {@code item}, which is in the heap. */
	void remove(Item<I, O> item) {
		int index = item.heapIndex;
		item.heapIndex = -1;
		int last = --this.count;
		Item<I, O> moved = this.items[last];
		this.items[last] = null;
		if (index != last) {
			siftDown(index, moved);
			if (this.items[index] == moved) {
				siftUp(index, moved);
			}
		}
		// Shrinks the array after a burst, so that a queue once large does not keep its peak forever.
		if (this.items.length > 64 && this.count < this.items.length / 4) {
			this.items = Arrays.copyOf(this.items, this.items.length / 2);
		}
	}

	/** Empties the heap (the items' places are reset by the caller). */
	void clear() {
		Arrays.fill(this.items, 0, this.count, null);
		this.count = 0;
	}

	private void siftUp(int index, Item<I, O> item) {
		int at = index;
		while (at > 0) {
			int parent = (at - 1) >>> 1;
			Item<I, O> above = this.items[parent];
			if (above.deadline <= item.deadline) {
				break;
			}
			place(at, above);
			at = parent;
		}
		place(at, item);
	}

	private void siftDown(int index, Item<I, O> item) {
		int at = index;
		int half = this.count >>> 1;
		while (at < half) {
			int child = 2 * at + 1;
			int right = child + 1;
			if (right < this.count && this.items[right].deadline < this.items[child].deadline) {
				child = right;
			}
			if (item.deadline <= this.items[child].deadline) {
				break;
			}
			place(at, this.items[child]);
			at = child;
		}
		place(at, item);
	}

	private void place(int index, Item<I, O> item) {
		this.items[index] = item;
		item.heapIndex = index;
	}

}
