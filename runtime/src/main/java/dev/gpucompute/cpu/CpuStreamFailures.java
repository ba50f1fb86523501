package dev.gpucompute.cpu;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongPredicate;

import dev.gpucompute.GpuException;
import org.jspecify.annotations.Nullable;

/**
 * The failure ledger of one {@link CpuStream}: the failures of its operations, each kept with the
 * sequence number of the operation that failed until a wait covering that operation claims it, and
 * the discard boundary a lease moves when it goes back to its pool.
 *
 * <p>A wait registered with boundary {@code from} and target {@code target} covers the operations in
 * ({@code from}, {@code target}]; its claim takes their failures as one report (the first, the others
 * suppressed), so each failure is reported once. A failure at or before the boundary that no
 * registered wait covers belongs to a holder that has left: it is not kept.
 *
 * <p>Not thread-safe: the owning stream calls it only with its monitor held, and logs what it
 * returns after letting go.
 */
final class CpuStreamFailures {

	/** Most failures attached to one report as suppressed; more are counted, not kept. */
	static final int MAX_SUPPRESSED = 8;

	private record Failure(long seq, GpuException error) {
	}

	/** Failures of operations up to here belong to a holder that has given the stream back. */
	private long discardedThrough;

	/** Failures not reported yet, in operation order; usually empty. */
	private @Nullable List<Failure> failures;

	/** The discard boundary: the last operation whose failures went with a holder that left. */
	long boundary() {
		return this.discardedThrough;
	}

	/**
	 * Keeps the failure of operation {@code seq} for whoever waits for it.
	 * @param claimable whether a registered wait covers an operation
	 * @return {@code false}, keeping nothing, when nobody can ever claim it (its holder gave the
	 * stream back and left no wait covering it)
	 */
	boolean keep(long seq, GpuException error, LongPredicate claimable) {
		if (seq <= this.discardedThrough && !claimable.test(seq)) {
			return false;
		}
		if (this.failures == null) {
			this.failures = new ArrayList<>(2);
		}
		this.failures.add(new Failure(seq, error));
		return true;
	}

	/**
	 * Takes the failures of operations in ({@code from}, {@code target}] as one report: the first,
	 * with the rest suppressed (at most {@link #MAX_SUPPRESSED}). {@code null} when there are none.
	 */
	@Nullable GpuException claim(long from, long target) {
		if (this.failures == null || this.failures.isEmpty()) {
			return null;
		}
		GpuException first = null;
		int suppressed = 0;
		for (Iterator<Failure> iterator = this.failures.iterator(); iterator.hasNext();) {
			Failure failure = iterator.next();
			if (failure.seq <= from || failure.seq > target) {
				continue;
			}
			iterator.remove();
			if (first == null) {
				first = failure.error;
			}
			else if (suppressed++ < MAX_SUPPRESSED && first != failure.error) {
				first.addSuppressed(failure.error);
			}
		}
		return first;
	}

	/**
	 * Moves the boundary to {@code through} and drops the failures at or before it that no registered
	 * wait covers.
	 * @param claimable whether a registered wait covers an operation
	 * @return the failures dropped, in operation order, for the caller to log; {@code null} when none
	 */
	@Nullable List<GpuException> discardThrough(long through, LongPredicate claimable) {
		this.discardedThrough = through;
		List<GpuException> dropped = null;
		if (this.failures != null) {
			for (Iterator<Failure> iterator = this.failures.iterator(); iterator.hasNext();) {
				Failure failure = iterator.next();
				if (failure.seq <= through && !claimable.test(failure.seq)) {
					iterator.remove();
					if (dropped == null) {
						dropped = new ArrayList<>(1);
					}
					dropped.add(failure.error);
				}
			}
		}
		return dropped;
	}

}
