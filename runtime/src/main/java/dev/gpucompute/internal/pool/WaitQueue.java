package dev.gpucompute.internal.pool;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import dev.gpucompute.GpuException;
import dev.gpucompute.PoolExhaustedException;
import org.jspecify.annotations.Nullable;

/**
 * The callers of a {@link Pool} waiting for streams, and the hand-off that serves them: who must
 * wait ({@link #mustQueue}), the wait itself ({@link #await}), and the grants, in order, as streams
 * become available ({@link #serve}): higher priorities first, first come first within a priority.
 * The thread that makes streams available books them for a waiter under the lock (idle streams, or
 * the right to create or to replace one, in the {@link PoolLedger}) and wakes that waiter alone; the
 * waiter then creates what it was granted outside the lock. Also counts the acquisitions that timed
 * out, for {@link Pool#stats()} and {@link Pool#stallReason()}.
 * <p>
 * Threading: not thread-safe by itself. The pool's lock, given at construction, guards every field
 * here and in the ledger; every method is called with it held, and {@link #await} waits on a
 * condition of it (releasing it while it waits).
 */
final class WaitQueue {

	/**
	 * A caller's request for {@code count} streams of one priority, and what it was granted. Waiting
	 * until {@link #served}; then {@link #slots} holds the idle streams it leases and {@link #creates}
	 * says how many it must create, after destroying the {@link #evicted} streams it replaces. A
	 * waiter that leaves unserved (timed out, interrupted, pool stopped) holds nothing. Guarded by
	 * the pool's lock until served; then its caller's alone.
	 */
	static final class Waiter {

		final int priority;

		final int count;

		/** Signalled when served or when the pool stops; null for a request granted at once. */
		final @Nullable Condition granted;

		boolean served;

		final List<PoolSlot> slots = new ArrayList<>(1);

		final List<PoolSlot> evicted = new ArrayList<>(0);

		int creates;

		Waiter(int priority, int count, @Nullable Condition granted) {
			this.priority = priority;
			this.count = count;
			this.granted = granted;
		}

		/** Wakes a queued waiter: only {@link #await} queues, each with its condition. */
		void signal() {
			Objects.requireNonNull(this.granted, "a queued waiter has a condition").signal();
		}

	}

	private final ReentrantLock lock;

	private final PoolLedger ledger;

	/** Waiting callers by priority, first come first. */
	@SuppressWarnings("unchecked")
	private final ArrayDeque<Waiter>[] waiters = new ArrayDeque[PoolLedger.PRIORITIES];

	/** Callers inside {@link #await}, served or not yet gone. */
	private int pending;

	private long timeouts;

	/** {@link System#nanoTime()} of the last acquisition that timed out; meaningful once {@code timeouts > 0}. */
	private long lastTimeoutAt;

	/**
	 * @param lock the pool's lock, which guards this queue and the ledger
	 * @param ledger the books the grants are taken from
	 */
	WaitQueue(ReentrantLock lock, PoolLedger ledger) {
		this.lock = lock;
		this.ledger = ledger;
		for (int i = 0; i < PoolLedger.PRIORITIES; i++) {
			this.waiters[i] = new ArrayDeque<>();
		}
	}

	/**
	 * Whether a caller asking for {@code count} streams of priority {@code p} must wait: when a
	 * caller of its priority waits already, when a higher-priority caller waits for streams, or when
	 * what it asks for is not there.
	 */
	boolean mustQueue(int p, int count) {
		assert this.lock.isHeldByCurrentThread();
		if (this.pending > 0) {
			if (!this.waiters[p].isEmpty()) {
				return true;
			}
			for (int q = PoolLedger.PRIORITIES - 1; q > p; q--) {
				Waiter head = this.waiters[q].peekFirst();
				// Waiters are served whenever they can be, so one whose own limit has room waits for streams.
				if (head != null && this.ledger.room(q) >= head.count) {
					return true;
				}
			}
		}
		return this.ledger.room(p) < count || this.ledger.obtainable(p) < count;
	}

	/** Grants {@code count} streams of priority {@code p} at once, to a caller that need not queue. */
	Waiter grantNow(int p, int count) {
		Waiter waiter = new Waiter(p, count, null);
		grant(waiter);
		return waiter;
	}

	/**
	 * Queues the caller and waits until its streams are granted.
	 * @return the waiter with its grant
	 * @throws PoolExhaustedException at the timeout (the caller tells the listener, outside the lock)
	 * @throws dev.gpucompute.ContextClosedException when the pool stops
	 * @throws GpuException when interrupted before its grant (the interrupt is kept)
	 */
	Waiter await(int p, int count, Duration timeout) {
		assert this.lock.isHeldByCurrentThread();
		Condition granted = this.lock.newCondition();
		Waiter waiter = new Waiter(p, count, granted);
		this.waiters[p].addLast(waiter);
		this.pending++;
		long remaining = timeout.toNanos();
		try {
			while (!waiter.served) {
				this.ledger.checkOpen();
				if (remaining <= 0) {
					this.timeouts++;
					this.lastTimeoutAt = System.nanoTime();
					// Told to the listener by the caller, outside the lock.
					throw new PoolExhaustedException(timeout, this.ledger.active(), this.ledger.maxSize(), this.pending);
				}
				try {
					remaining = granted.awaitNanos(remaining);
				}
				catch (InterruptedException ex) {
					if (waiter.served) {
						// Granted meanwhile: the caller gets its streams and its interrupt.
						Thread.currentThread().interrupt();
						break;
					}
					Thread.currentThread().interrupt();
					throw new GpuException("Interrupted while waiting for a pooled stream", ex);
				}
			}
			return waiter;
		}
		finally {
			this.pending--;
			if (!waiter.served) {
				this.waiters[p].remove(waiter);
				// A waiter that leaves may have held back the ones behind it.
				serve();
			}
		}
	}

	/**
	 * Grants streams to waiters in order: higher priorities first, first come first within a
	 * priority. A head held back by its priority's limit lets the other priority go; a head held back
	 * for want of streams stops everyone behind it.
	 */
	void serve() {
		assert this.lock.isHeldByCurrentThread();
		for (int p = PoolLedger.PRIORITIES - 1; p >= 0; p--) {
			ArrayDeque<Waiter> queue = this.waiters[p];
			Waiter head;
			while ((head = queue.peekFirst()) != null) {
				if (this.ledger.room(p) < head.count) {
					break;
				}
				if (this.ledger.obtainable(p) < head.count) {
					return;
				}
				queue.pollFirst();
				grant(head);
				head.signal();
			}
		}
	}

	/** Books streams for a waiter; what must be created is created by the waiter. */
	private void grant(Waiter waiter) {
		int p = waiter.priority;
		for (int i = 0; i < waiter.count; i++) {
			PoolSlot slot = this.ledger.takeIdle(p);
			if (slot != null) {
				waiter.slots.add(slot);
			}
			else {
				if (!this.ledger.reserveNew()) {
					waiter.evicted.add(this.ledger.evictFor(p));
				}
				waiter.creates++;
			}
		}
		waiter.served = true;
		this.ledger.book(p, waiter.count);
	}

	/** Wakes every waiter, once the ledger is closed: each leaves with a {@link dev.gpucompute.ContextClosedException}. */
	void wakeAll() {
		for (ArrayDeque<Waiter> queue : this.waiters) {
			for (Waiter waiter : queue) {
				waiter.signal();
			}
		}
	}

	/** Callers waiting now. */
	int pending() {
		return this.pending;
	}

	/** Acquisitions that timed out so far. */
	long timeouts() {
		return this.timeouts;
	}

	/** {@link System#nanoTime()} of the last acquisition that timed out; meaningful once {@link #timeouts()} is above zero. */
	long lastTimeoutAt() {
		return this.lastTimeoutAt;
	}

}
