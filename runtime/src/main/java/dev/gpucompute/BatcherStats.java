package dev.gpucompute;

/**
 * A snapshot of a {@link GpuBatcher}'s figures. Every item that {@code submit} accepted ends in
 * exactly one of {@code expired}, {@code cancelled}, {@code abandoned} or {@code dispatched}, or is
 * still {@code queued}; a dispatched item's future is completed by its batch ({@code succeeded} or
 * {@code failed}) unless its caller or the batcher's close completed it first.
 *
 * @param name the batcher's name
 * @param queued items waiting now
 * @param runningBatches batches being formed or run now (a lease being acquired counts)
 * @param submitted items accepted since the batcher was built
 * @param rejected items refused because the queue was full ({@link BatchQueueFullException})
 * @param expired items whose deadline passed in the queue ({@link BatchTimeoutException})
 * @param cancelled items dropped before dispatch because their future was cancelled or completed by
 * the caller
 * @param abandoned items completed exceptionally at close, queued or running when the drain
 * timeout passed
 * @param batches batches handed to the handler
 * @param dispatched items handed to the handler
 * @param succeeded items whose future got their result
 * @param failed items whose future got their batch's or their own failure
 * @param maxBatchSize most items per batch
 * @param maxQueued most items waiting
 */
public record BatcherStats(String name, int queued, int runningBatches, long submitted, long rejected, long expired,
		long cancelled, long abandoned, long batches, long dispatched, long succeeded, long failed, int maxBatchSize,
		int maxQueued) {

	/** Mean items per batch so far; 0 before the first batch. */
	public double meanBatchSize() {
		return (this.batches == 0) ? 0 : (double) this.dispatched / this.batches;
	}

}
