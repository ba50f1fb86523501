package dev.gpucompute.internal.core;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The operations of a context that enqueue work and register its completion (copies, a stream's
 * {@code completion()}), counted so that close can let those already begun finish: close
 * {@linkplain #refuse() refuses} new ones, then {@linkplain #awaitEmpty waits} for those inside
 * before it waits for the device. Without it an operation that passed the context's open check just
 * before close could enqueue its work after close had waited for the device, and its future was
 * abandoned although the drain timeout was long.
 *
 * <p>Thread-safe. Entering and leaving cost one atomic increment each, with no lock: the check of
 * {@link #refuse()}'s flag comes after the increment, and close reads the count after setting the flag,
 * so an operation either sees the flag and backs out or is counted by close. One counter, not a
 * striped one ({@code LongAdder}): its sum is no snapshot, and the +1 and -1 of an operation turned
 * away could land in two cells read at different times, summing to zero while an admitted one is
 * inside. Only copies and completion requests pass here, not launches.
 */
public final class WorkGate {

	private final AtomicLong inside = new AtomicLong();

	private volatile boolean refused;

	/** Enters an operation; {@code false} once close began, and the caller then must not start it. */
	public boolean enter() {
		this.inside.incrementAndGet();
		if (this.refused) {
			this.inside.decrementAndGet();
			return false;
		}
		return true;
	}

	/** Leaves an operation {@link #enter()} admitted, on every path. */
	public void exit() {
		this.inside.decrementAndGet();
	}

	/** From now on {@link #enter()} refuses. */
	public void refuse() {
		this.refused = true;
	}

	/**
	 * Waits until no admitted operation is inside, after {@link #refuse()}.
	 * @param deadline {@link System#nanoTime()} to give up at
	 * @return whether they all left by then
	 */
	public boolean awaitEmpty(long deadline) {
		long pause = 10_000;
		while (this.inside.get() > 0) {
			if (deadline - System.nanoTime() <= 0 || Thread.currentThread().isInterrupted()) {
				return false;
			}
			LockSupport.parkNanos(this, pause);
			pause = Math.min(pause * 2, 1_000_000);
		}
		return true;
	}

}
