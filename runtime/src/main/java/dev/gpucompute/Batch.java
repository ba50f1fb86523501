package dev.gpucompute;

import java.util.List;
import java.util.Objects;

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
public final class Batch<I> {

	private final String batcher;

	private final Object key;

	private final List<I> items;

	private final GpuStream stream;

	private final Throwable[] failures;

	Batch(String batcher, Object key, List<I> items, GpuStream stream) {
		this.batcher = batcher;
		this.key = key;
		this.items = items;
		this.stream = stream;
		this.failures = new Throwable[items.size()];
	}

	/** The name of the batcher this batch belongs to. */
	public String batcher() {
		return this.batcher;
	}

	/** The batch key every item of this batch has ({@code null} when the key function gave null). */
	public Object key() {
		return this.key;
	}

	/** The items, in the order they were submitted; unmodifiable. */
	public List<I> items() {
		return this.items;
	}

	/** How many items the batch holds (at least one). */
	public int size() {
		return this.items.size();
	}

	/** The leased stream this batch runs on; the handler's thread has it as its current stream. */
	public GpuStream stream() {
		return this.stream;
	}

	/**
	 * Fails one item instead of giving it a result: its future completes exceptionally with
	 * {@code cause}, the other items get their results. The last call for an index wins.
	 * @throws IndexOutOfBoundsException when {@code index} is not an item's
	 */
	public void fail(int index, Throwable cause) {
		Objects.requireNonNull(cause, "cause");
		Objects.checkIndex(index, this.failures.length);
		synchronized (this.failures) {
			this.failures[index] = cause;
		}
	}

	/** The failure reported for an item, or {@code null}. */
	Throwable failure(int index) {
		synchronized (this.failures) {
			return this.failures[index];
		}
	}

	@Override
	public String toString() {
		return "Batch[" + this.batcher + ", key " + this.key + ", " + this.items.size() + " items, " + this.stream.name()
				+ "]";
	}

}
