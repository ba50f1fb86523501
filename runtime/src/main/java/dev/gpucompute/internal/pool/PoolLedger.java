package dev.gpucompute.internal.pool;

import java.util.ArrayDeque;
import java.util.List;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.StreamPriority;

/**
 * The books of a {@link Pool}: which streams are idle, per priority; how many are leased, per
 * priority against the priority's limit and in all; how many the pool counts against its maximum
 * (created, or booked by a caller that is creating one); and whether the pool has stopped. Also the
 * figures {@link Pool#stats()} reports from them: most leased at once, acquisitions.
 * <p>
 * A stream is in one of three states here: idle (in its priority's queue, not leased), leased
 * (counted in {@code active} and its priority's {@code leasedBy}), or out of the books (evicted,
 * destroyed, or returned after the pool stopped). Booking one for a caller takes, in this order, an
 * idle stream of its priority, room to create one below the maximum, or an idle stream of the other
 * priority to replace: {@link #takeIdle}, {@link #reserveNew}, {@link #evictFor}; what the pool
 * decides with them, it decides under its lock in one go.
 * <p>
 * Threading: not thread-safe. The pool's lock guards every field, and every method is called with
 * it held; only {@link #maxSize()} and {@link #limit(int)}, fixed at construction, may be read
 * without it.
 */
final class PoolLedger {

	static final int PRIORITIES = StreamPriority.values().length;

	private final int maxSize;

	@SuppressWarnings("unchecked")
	private final ArrayDeque<PoolSlot>[] idle = new ArrayDeque[PRIORITIES];

	/** Most streams leased at once per priority (the pool's maximum when unlimited); fixed. */
	private final int[] limits = new int[PRIORITIES];

	/** Streams leased now per priority. */
	private final int[] leasedBy = new int[PRIORITIES];

	/** Streams counted against the maximum: idle, leased, or booked for a caller that creates it. */
	private int total;

	/** Streams leased now, all priorities. */
	private int active;

	private int highWaterMark;

	private long acquisitions;

	private boolean closed;

	/**
	 * @param maxSize most streams the pool holds
	 * @param priorityLimits most streams leased at once per priority, by ordinal (capped at {@code maxSize})
	 */
	PoolLedger(int maxSize, int[] priorityLimits) {
		this.maxSize = maxSize;
		for (int i = 0; i < PRIORITIES; i++) {
			this.idle[i] = new ArrayDeque<>(maxSize);
			this.limits[i] = Math.min(maxSize, priorityLimits[i]);
		}
	}

	int maxSize() {
		return this.maxSize;
	}

	/** Most streams of priority {@code p} leased at once; fixed, readable without the lock. */
	int limit(int p) {
		return this.limits[p];
	}

	/** How many more streams of priority {@code p} its limit lets the pool lease now. */
	int room(int p) {
		return this.limits[p] - this.leasedBy[p];
	}

	/** Streams of priority {@code p} that could be leased now: idle ones, new ones, replaced ones. */
	int obtainable(int p) {
		return this.idle[p].size() + (this.maxSize - this.total) + this.idle[other(p)].size();
	}

	/** The most recently returned idle stream of priority {@code p}, now marked leased; null when none is idle. */
	PoolSlot takeIdle(int p) {
		PoolSlot slot = this.idle[p].pollLast();
		if (slot != null) {
			slot.leased = true;
		}
		return slot;
	}

	/** Counts one more stream against the maximum, for a caller to create; false at the maximum. */
	boolean reserveNew() {
		if (this.total < this.maxSize) {
			this.total++;
			return true;
		}
		return false;
	}

	/**
	 * Takes out of the books the idle stream of the other priority that has been idle longest, for
	 * the caller to destroy and replace with one of priority {@code p}; the total is unchanged.
	 */
	PoolSlot evictFor(int p) {
		return this.idle[other(p)].pollFirst();
	}

	/** Books {@code count} granted leases of priority {@code p}. */
	void book(int p, int count) {
		this.leasedBy[p] += count;
		this.active += count;
		this.acquisitions += count;
		if (this.active > this.highWaterMark) {
			this.highWaterMark = this.active;
		}
	}

	/** Adds a stream created up front, idle. */
	void addIdle(PoolSlot slot) {
		this.total++;
		this.idle[slot.priority.ordinal()].addLast(slot);
	}

	/**
	 * Books the return of a leased stream: it is idle again unless the pool has stopped (then the
	 * context's destroyAll owns it, and it only stays out of the idle queue). The caller has made
	 * the slot fit for its next holder first.
	 */
	void returned(PoolSlot slot) {
		int p = slot.priority.ordinal();
		this.active--;
		this.leasedBy[p]--;
		if (!this.closed) {
			this.idle[p].addLast(slot);
		}
	}

	/**
	 * Books the return of a leased stream that must not serve again (its backend lost control of it):
	 * out of the books, and no longer counted against the maximum, so that another can be created in
	 * its place. The caller destroys it. After the pool stopped it is booked as {@link #returned} (the
	 * context's destroyAll owns it then).
	 * @return whether the caller must destroy it now
	 */
	boolean discarded(PoolSlot slot) {
		if (this.closed) {
			returned(slot);
			return false;
		}
		int p = slot.priority.ordinal();
		this.active--;
		this.leasedBy[p]--;
		this.total--;
		return true;
	}

	/**
	 * Undoes a booking of {@code count} streams of priority {@code p} whose creation failed: the
	 * streams {@code taken} go back idle, and the {@code notCreated} that were counted against the
	 * maximum no longer are.
	 */
	void cancel(int p, int count, List<PoolSlot> taken, int notCreated) {
		for (PoolSlot slot : taken) {
			slot.leased = false;
			this.idle[slot.priority.ordinal()].addLast(slot);
		}
		this.total -= notCreated;
		this.active -= count;
		this.leasedBy[p] -= count;
	}

	/** Empties the idle queues and the total, when the pool destroys every stream. */
	void clear() {
		for (ArrayDeque<PoolSlot> queue : this.idle) {
			queue.clear();
		}
		this.total = 0;
	}

	/** Stops the pool: no new leases, and streams returned from now on stay out of the idle queues. */
	void close() {
		this.closed = true;
	}

	boolean isClosed() {
		return this.closed;
	}

	/** @throws ContextClosedException when the pool has stopped */
	void checkOpen() {
		if (this.closed) {
			throw new ContextClosedException("The stream pool is shut down: its GPU context is closing or closed");
		}
	}

	int total() {
		return this.total;
	}

	int active() {
		return this.active;
	}

	int idleCount() {
		int idleNow = 0;
		for (ArrayDeque<PoolSlot> queue : this.idle) {
			idleNow += queue.size();
		}
		return idleNow;
	}

	int highWaterMark() {
		return this.highWaterMark;
	}

	long acquisitions() {
		return this.acquisitions;
	}

	private static int other(int p) {
		return PRIORITIES - 1 - p;
	}

}
