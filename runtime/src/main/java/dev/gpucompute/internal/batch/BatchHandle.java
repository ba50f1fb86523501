package dev.gpucompute.internal.batch;

import java.util.List;
import java.util.Objects;

import dev.gpucompute.Batch;
import dev.gpucompute.GpuStream;

/** The implementation of {@link Batch}. */
final class BatchHandle<I> implements Batch<I> {

	private final String batcher;

	private final Object key;

	private final List<I> items;

	private final GpuStream stream;

	private final Throwable[] failures;

	BatchHandle(String batcher, Object key, List<I> items, GpuStream stream) {
		this.batcher = batcher;
		this.key = key;
		this.items = items;
		this.stream = stream;
		this.failures = new Throwable[items.size()];
	}

	/** The name of the batcher this batch belongs to. */
	@Override
	public String batcher() {
		return this.batcher;
	}

	/** The batch key every item of this batch has ({@code null} when the key function gave null). */
	@Override
	public Object key() {
		return this.key;
	}

	/** The items, in the order they were submitted; unmodifiable. */
	@Override
	public List<I> items() {
		return this.items;
	}

	/** How many items the batch holds (at least one). */
	@Override
	public int size() {
		return this.items.size();
	}

	/** The leased stream this batch runs on; the handler's thread has it as its current stream. */
	@Override
	public GpuStream stream() {
		return this.stream;
	}

	/**
	 * Fails one item instead of giving it a result: its future completes exceptionally with
	 * {@code cause}, the other items get their results. The last call for an index wins.
	 * @throws IndexOutOfBoundsException when {@code index} is not an item's
	 */
	@Override
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
