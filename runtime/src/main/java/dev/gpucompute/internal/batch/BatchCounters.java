package dev.gpucompute.internal.batch;

import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;

/**
 * The running totals of one {@link GpuBatcher} behind its {@link BatcherStats}: items submitted,
 * refused, timed out, cancelled, abandoned at close, dispatched in how many batches, and how their
 * futures ended. Owns nothing but the counts; what each count means is the {@link BatcherStats}
 * record's.
 *
 * <p>Not thread-safe: the batcher's lock ({@link BatcherState#lock}) guards it, so that every booking
 * happens under the same lock as the queue change it counts and a {@link #snapshot} is consistent.
 */
final class BatchCounters {

	private long submitted;

	private long rejected;

	private long expired;

	private long cancelled;

	private long abandoned;

	private long batches;

	private long dispatched;

	private long succeeded;

	private long failed;

	/** An item was accepted: queued, or taken as a batch of its own by {@code call}. */
	void submitted() {
		this.submitted++;
	}

	/** An item was refused because the queue was full. */
	void rejected() {
		this.rejected++;
	}

	/** Queued items whose deadline passed before they ran. */
	void expired(int count) {
		this.expired += count;
	}

	/** Queued items whose callers cancelled (or completed) their futures before they ran. */
	void cancelled(int count) {
		this.cancelled += count;
	}

	/** Items whose futures close completed with a {@link dev.gpucompute.ContextClosedException}. */
	void abandoned(int count) {
		this.abandoned += count;
	}

	/** A batch of {@code size} items was taken to run. */
	void dispatched(int size) {
		this.batches++;
		this.dispatched += size;
	}

	/** A batch's futures were completed: {@code ok} with a result, {@code bad} with a failure. */
	void completed(int ok, int bad) {
		this.succeeded += ok;
		this.failed += bad;
	}

	/** The totals so far, with the figures of the moment the batcher adds. */
	BatcherStats snapshot(String name, int queued, int runningBatches, int maxBatchSize, int maxQueued) {
		return new BatcherStats(name, queued, runningBatches, this.submitted, this.rejected, this.expired,
				this.cancelled, this.abandoned, this.batches, this.dispatched, this.succeeded, this.failed, maxBatchSize,
				maxQueued);
	}

}
