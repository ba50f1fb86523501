package dev.gpucompute.batch;

import java.util.List;

import dev.gpucompute.GpuStream;
import org.jspecify.annotations.Nullable;

/**
 * One batch of a {@link GpuBatcher}, as its {@link BatchHandler} sees it: the items, their shared
 * batch key and the leased stream to run them on.
 *
 * <p>Valid only during the handler's call: the stream goes back to the pool when the handler
 * returns. Used by the handler's thread; {@link #fail(int, Throwable)} may also be called from
 * threads the handler waits for.
 *
 * @param <I> item type
 */
public interface Batch<I> {

	/** The name of the batcher this batch belongs to. */
	String batcher();

	/** The batch key every item of this batch has ({@code null} when the key function gave null). */
	@Nullable Object key();

	/** The items, in the order they were submitted; unmodifiable. */
	List<I> items();

	/** How many items the batch holds (at least one). */
	int size();

	/** The leased stream this batch runs on; the handler's thread has it as its current stream. */
	GpuStream stream();

	/**
	 * Fails one item instead of giving it a result: its future completes exceptionally with
	 * {@code cause}, the other items get their results. The last call for an index wins.
	 * @throws IndexOutOfBoundsException when {@code index} is not an item's
	 */
	void fail(int index, Throwable cause);


}
