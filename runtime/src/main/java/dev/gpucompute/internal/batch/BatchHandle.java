package dev.gpucompute.internal.batch;

import java.util.List;
import java.util.Objects;

import dev.gpucompute.GpuStream;
import dev.gpucompute.batch.Batch;
import org.jspecify.annotations.Nullable;

/** The implementation of {@link Batch}. */
final class BatchHandle<I> implements Batch<I> {

	private final String batcher;

	private final @Nullable Object key;

	private final List<I> items;

	private final GpuStream stream;

	private final Throwable[] failures;

	BatchHandle(String batcher, @Nullable Object key, List<I> items, GpuStream stream) {
		this.batcher = batcher;
		this.key = key;
		this.items = items;
		this.stream = stream;
		this.failures = new Throwable[items.size()];
	}

	@Override
	public String batcher() {
		return this.batcher;
	}

	@Override
	public @Nullable Object key() {
		return this.key;
	}

	@Override
	public List<I> items() {
		return this.items;
	}

	@Override
	public int size() {
		return this.items.size();
	}

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
