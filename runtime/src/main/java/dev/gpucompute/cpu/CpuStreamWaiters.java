package dev.gpucompute.cpu;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;

import dev.gpucompute.GpuException;
import org.jspecify.annotations.Nullable;

/**
 * The waits registered on one {@link CpuStream} and not reached yet: {@code whenDone} callbacks and
 * the internal waits of event waits on other streams. It keeps the smallest target among them, so
 * that finishing an operation no wait is for costs one comparison, not a scan.
 *
 * <p>Not thread-safe: the owning stream calls it only with its monitor held, and calls the reached
 * waiters' callbacks after letting go.
 */
final class CpuStreamWaiters {

	/** A registered wait for the stream to reach {@code target}. */
	static final class Waiter {

		final long target;

		/** The boundary at registration: failures at or before it are not this waiter's. */
		final long from;

		/** Whether it takes the failures it covers (callbacks for callers) or only waits (internal). */
		final boolean claims;

		final Consumer<GpuException> callback;

		/** What {@link #takeReached} claimed for it, or {@code null}. */
		@Nullable GpuException failure;

		Waiter(long target, long from, boolean claims, Consumer<GpuException> callback) {
			this.target = target;
			this.from = from;
			this.claims = claims;
			this.callback = callback;
		}

	}

	/** Usually empty, so made on the first registration. */
	private @Nullable List<Waiter> waiters;

	/** The smallest target among {@link #waiters}. */
	private long nextTarget = Long.MAX_VALUE;

	/** Whether finishing operation {@code seq} reaches at least one wait. */
	boolean anyReachedAt(long seq) {
		return this.nextTarget <= seq;
	}

	void add(Waiter waiter) {
		if (this.waiters == null) {
			this.waiters = new ArrayList<>(2);
		}
		this.waiters.add(waiter);
		if (waiter.target < this.nextTarget) {
			this.nextTarget = waiter.target;
		}
	}

	/** Whether a registered wait that claims failures covers operation {@code seq}. */
	boolean covers(long seq) {
		if (this.waiters != null) {
			for (Waiter waiter : this.waiters) {
				if (waiter.claims && waiter.from < seq && seq <= waiter.target) {
					return true;
				}
			}
		}
		return false;
	}

	/**
	 * Removes and returns the waiters reached at {@code seq}, in registration order; those that claim
	 * take their failures from {@code failures} (into {@link Waiter#failure}).
	 */
	List<Waiter> takeReached(long seq, CpuStreamFailures failures) {
		List<Waiter> reached = new ArrayList<>(2);
		long next = Long.MAX_VALUE;
		// Reached waits were added, so the list exists.
		for (Iterator<Waiter> iterator = Objects.requireNonNull(this.waiters).iterator(); iterator.hasNext();) {
			Waiter waiter = iterator.next();
			if (waiter.target <= seq) {
				iterator.remove();
				reached.add(waiter);
			}
			else if (waiter.target < next) {
				next = waiter.target;
			}
		}
		this.nextTarget = next;
		for (Waiter waiter : reached) {
			if (waiter.claims) {
				waiter.failure = failures.claim(waiter.from, waiter.target);
			}
		}
		return reached;
	}

	/** Removes and returns every waiter (the stream is abandoned at close). */
	List<Waiter> takeAll() {
		List<Waiter> all = (this.waiters != null) ? this.waiters : List.of();
		this.waiters = null;
		this.nextTarget = Long.MAX_VALUE;
		return all;
	}

}
