package dev.gpucompute.internal.batch;

import java.time.Duration;

/**
 * When a {@link dev.gpucompute.batch.GpuBatcher}'s next batch may be formed, and how long a refused caller should wait:
 * holding items for a fuller batch ({@code maxQueueDelay}) while batches run or right after one, and
 * the recent cost per item behind the retry-after hint. Not thread-safe: the batcher's lock guards it.
 */
final class BatchPacing {

	/** Weight of the newest batch in the average cost per item (for the retry-after hint). */
	private static final double COST_ALPHA = 0.2;

	private final int maxBatchSize;

	private final long maxDelayNanos;

	/** When the last batch's results went out ({@link System#nanoTime()}); holding counts from it. */
	private long lastBatchEnd = Long.MIN_VALUE;

	/** Items of the last batch: about as many callers it set free may come back at once. */
	private int lastBatchSize;

	/** Recent device-and-handler time per item, nanoseconds; 0 before the first batch. */
	private double costPerItem;

	BatchPacing(int maxBatchSize, long maxDelayNanos) {
		this.maxBatchSize = maxBatchSize;
		this.maxDelayNanos = maxDelayNanos;
	}

	/**
	 * How long until a batch may be formed, with items queued. At once when closing ({@code open}
	 * false), without a delay, or when a key has a full batch. While other batches run ({@code busy}
	 * of them), once the oldest item has waited {@code maxQueueDelay}. When none runs: at once if no
	 * batch ended within the delay (an item that finds the batcher idle is never held), or once as
	 * many items wait as the last batch had (the callers it set free have come back); else when the
	 * delay has passed since it ended.
	 */
	long nanosUntilReady(long now, boolean open, int busy, BatchQueue<?, ?> queue) {
		if (!open || this.maxDelayNanos == 0) {
			return 0;
		}
		if (busy > 0) {
			return queue.nanosUntilReady(now, this.maxBatchSize, this.maxDelayNanos);
		}
		long sinceEnd = now - this.lastBatchEnd;
		if (this.lastBatchEnd == Long.MIN_VALUE || sinceEnd >= this.maxDelayNanos
				|| queue.largestKey() >= Math.min(this.maxBatchSize, this.lastBatchSize)) {
			return 0;
		}
		return this.maxDelayNanos - sinceEnd;
	}

	/**
	 * Whether an item arriving now, with nothing else waiting or running, would be held for the
	 * callers of the last batch (a batch of more than one ended within the delay).
	 */
	boolean holdingAfterBatch(long now) {
		return this.maxDelayNanos > 0 && this.lastBatchEnd != Long.MIN_VALUE
				&& now - this.lastBatchEnd < this.maxDelayNanos && Math.min(this.maxBatchSize, this.lastBatchSize) > 1;
	}

	/**
	 * A batch of {@code size} items, which took {@code elapsed} nanoseconds, is about to release its
	 * results: its end and size are what the next batch may be held for.
	 */
	void batchEnded(int size, long elapsed) {
		this.lastBatchEnd = System.nanoTime();
		this.lastBatchSize = size;
		double cost = (double) elapsed / size;
		this.costPerItem = (this.costPerItem == 0) ? cost : this.costPerItem + COST_ALPHA * (cost - this.costPerItem);
	}

	/** Queue time {@code queued} items need at the recent rate, for {@link dev.gpucompute.batch.BatchQueueFullException}. */
	Duration retryAfter(int queued, int concurrency) {
		if (this.costPerItem <= 0) {
			return Duration.ofSeconds(1);
		}
		double nanos = queued * this.costPerItem / concurrency;
		return Duration.ofNanos((long) Math.min(Math.max(nanos, 1e6), 60e9));
	}

}
