package dev.gpucompute.batch;

import java.util.List;

/**
 * The work of a {@link GpuBatcher}: runs one batch of items on the batch's leased stream and returns
 * one result per item.
 *
 * <p>Called on one of the batcher's dispatch threads, with {@link Batch#stream()} as the thread's
 * current stream, so launches and allocations without an explicit stream go there. Calls for
 * different batches may run at the same time (up to {@code maxConcurrentBatches}), each on its own
 * stream; the handler must be thread-safe across batches. After it returns, the batcher waits for
 * the stream's work, so a kernel failure that surfaces only then still fails this batch's items, and
 * the next batch gets a clean stream.
 *
 * @param <I> item type
 * @param <O> result type
 */
@FunctionalInterface
public interface BatchHandler<I, O> {

	/**
	 * Runs a batch.
	 * @param batch the items (all with the same batch key), in the order they were submitted, and the
	 * stream to run them on; valid only during this call
	 * @return one result per item, in the items' order ({@code null} elements are allowed); an entry
	 * for an item failed with {@link Batch#fail(int, Throwable)} is ignored
	 * @throws Exception to fail every item of the batch (not other batches) with it
	 */
	List<? extends O> handle(Batch<I> batch) throws Exception;

}
