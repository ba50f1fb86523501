package dev.gpucompute.internal.memory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.StagingExhaustedException;
import org.jspecify.annotations.Nullable;

/**
 * The bytes of staging memory (page-locked on CUDA) the copies of one context may hold at once:
 * a fair semaphore counted in bytes. A copy asks for its first block (or blocks) with
 * {@link #acquire}, which waits first come first served up to the staging timeout, and for more with
 * {@link #tryAcquire}, which never waits and never overtakes a waiting copy. So a copy never waits
 * while it holds staging, and copies cannot deadlock each other. Thread-safe; its lock is a leaf
 * (nothing is called while it is held).
 */
final class StagingBudget {

	private final long limit;

	private final long timeoutNanos;

	private final ReentrantLock lock = new ReentrantLock();

	private final ArrayDeque<Waiter> waiters = new ArrayDeque<>();

	private long used;

	private long timeouts;

	private volatile int waiting;

	/** Why copies may no longer wait (the context is closing), or null while they may. */
	private @Nullable String closed;

	StagingBudget(long limit, Duration timeout) {
		this.limit = limit;
		this.timeoutNanos = timeout.toNanos();
	}

	long limit() {
		return this.limit;
	}

	/** The staging timeout: the longest a copy waits for room here, or for one of its own blocks to come back. */
	long timeoutNanos() {
		return this.timeoutNanos;
	}

	/**
	 * Reserves {@code bytes}, waiting behind the copies that wait already until they fit.
	 * @throws StagingExhaustedException when they do not fit within the staging timeout
	 * @throws ContextClosedException when the context closes first
	 * @throws GpuException when the thread is interrupted while it waits (its interrupt is kept)
	 * @throws IllegalArgumentException when {@code bytes} exceed the whole budget (a caller's bug)
	 */
	void acquire(long bytes) {
		if (bytes > this.limit) {
			throw new IllegalArgumentException(bytes + " bytes of staging can never fit a budget of " + this.limit);
		}
		this.lock.lock();
		try {
			if (this.closed != null) {
				throw new ContextClosedException(this.closed);
			}
			if (this.waiters.isEmpty() && this.used + bytes <= this.limit) {
				this.used += bytes;
				return;
			}
			await(bytes);
		}
		finally {
			this.lock.unlock();
		}
	}

	private void await(long bytes) {
		Waiter waiter = new Waiter(bytes, this.lock.newCondition());
		this.waiters.addLast(waiter);
		this.waiting = this.waiters.size();
		long remaining = this.timeoutNanos;
		try {
			while (!waiter.granted) {
				if (this.closed != null) {
					throw new ContextClosedException(this.closed);
				}
				if (remaining <= 0) {
					this.timeouts++;
					throw new StagingExhaustedException(Duration.ofNanos(this.timeoutNanos), bytes, this.used, this.limit,
							this.waiters.size() - 1);
				}
				try {
					remaining = waiter.wakeUp.awaitNanos(remaining);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
					if (waiter.granted) {
						break; // the caller gets its staging and its interrupt
					}
					throw new GpuException("Interrupted while waiting for staging memory", ex);
				}
			}
		}
		finally {
			if (!waiter.granted) {
				this.waiters.remove(waiter);
				serve(); // the ones behind it may fit
			}
			this.waiting = this.waiters.size();
		}
	}

	/** Reserves {@code bytes} if they fit now and no copy waits; never waits. */
	boolean tryAcquire(long bytes) {
		this.lock.lock();
		try {
			if (this.closed == null && this.waiters.isEmpty() && this.used + bytes <= this.limit) {
				this.used += bytes;
				return true;
			}
			return false;
		}
		finally {
			this.lock.unlock();
		}
	}

	void release(long bytes) {
		this.lock.lock();
		try {
			this.used -= bytes;
			serve();
		}
		finally {
			this.lock.unlock();
		}
	}

	/** Grants waiters in order while the first fits: a large request is not overtaken by small ones. */
	private void serve() {
		Waiter head;
		while ((head = this.waiters.peekFirst()) != null && this.used + head.bytes <= this.limit) {
			this.waiters.pollFirst();
			this.used += head.bytes;
			head.granted = true;
			head.wakeUp.signal();
		}
		this.waiting = this.waiters.size();
	}

	/** Whether a copy waits: the others give their staging back as their chunks complete instead of reusing it. */
	boolean contended() {
		return this.waiting > 0;
	}

	/** Copies waiting now. */
	int waiting() {
		return this.waiting;
	}

	/** A chunked copy gave up waiting for one of its own blocks ({@link StagingExhaustedException}): counted with the timeouts here. */
	void ownBlockTimedOut() {
		this.lock.lock();
		try {
			this.timeouts++;
		}
		finally {
			this.lock.unlock();
		}
	}

	/**
	 * Waits that ended with {@link StagingExhaustedException} since the context opened: here, or for a
	 * copy's own blocks.
	 */
	long timeouts() {
		this.lock.lock();
		try {
			return this.timeouts;
		}
		finally {
			this.lock.unlock();
		}
	}

	/** The context is closing: waiting copies and later ones get a {@link ContextClosedException} with {@code reason}. */
	void close(String reason) {
		this.lock.lock();
		try {
			this.closed = reason;
			for (Waiter waiter : this.waiters) {
				waiter.wakeUp.signal();
			}
		}
		finally {
			this.lock.unlock();
		}
	}

	private static final class Waiter {

		final long bytes;

		final Condition wakeUp;

		boolean granted;

		Waiter(long bytes, Condition wakeUp) {
			this.bytes = bytes;
			this.wakeUp = wakeUp;
		}

	}

}
