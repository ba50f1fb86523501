package dev.gpucompute.internal.batch;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuLauncher;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.batch.BatchQueue.Item;

/**
 * Runs one batch of a {@link GpuBatcher} through its {@link BatchHandler} on the batch's leased
 * stream, and sorts out what each item gets: its result, its own failure, or the batch's. Holds only
 * the batcher's settings, so it is thread-safe: dispatch threads and callers running a batch inline
 * use it at once.
 */
final class BatchRunner<I, O> {

	// The batcher's logger: a handler's error is the batcher speaking, and is filtered by that name.
	private static final Logger log = LoggerFactory.getLogger(GpuBatcher.class);

	private final String name;

	private final BatchHandler<I, O> handler;

	private final GpuLauncher launcher;

	BatchRunner(String name, BatchHandler<I, O> handler, GpuLauncher launcher) {
		this.name = name;
		this.handler = handler;
		this.launcher = launcher;
	}

	/**
	 * Runs the handler on the leased stream, waits for the stream's work and returns the lease; fills
	 * each item's result or failure (its own, else the batch's).
	 */
	void run(List<Item<I, O>> items, StreamLease lease, Object[] results, Throwable[] failures) {
		List<I> values = new ArrayList<>(items.size());
		for (Item<I, O> item : items) {
			values.add(item.value);
		}
		BatchHandle<I> batch = new BatchHandle<>(this.name, items.get(0).key(), Collections.unmodifiableList(values),
				lease.stream());
		List<? extends O> returned = null;
		Throwable failure = null;
		try {
			try (StreamScope scope = this.launcher.useStream(lease.stream())) {
				returned = this.handler.handle(batch);
			}
			catch (Throwable ex) {
				failure = ex;
			}
			try {
				// Failures that surface only now still belong to this batch.
				lease.stream().synchronize();
			}
			catch (RuntimeException ex) {
				failure = combine(failure, ex);
			}
		}
		finally {
			lease.close();
		}
		if (failure == null && (returned == null || returned.size() != items.size())) {
			failure = new IllegalStateException("The handler of batcher '" + this.name + "' returned "
					+ ((returned == null) ? "null" : returned.size() + " results") + " for a batch of " + items.size()
					+ " items; it must return one result per item");
		}
		if (failure instanceof Error error && !(failure instanceof StackOverflowError)) {
			log.error("The handler of batcher '{}' failed with an error; its batch of {} items fails with it",
					this.name, items.size(), error);
		}
		for (int i = 0; i < items.size(); i++) {
			Throwable own = batch.failure(i);
			failures[i] = (own != null) ? own : failure;
			if (failures[i] == null && returned != null) { // without a failure the handler returned its results
				results[i] = returned.get(i);
			}
		}
	}

	private static Throwable combine(@Nullable Throwable first, Throwable second) {
		if (first == null) {
			return second;
		}
		if (first != second) {
			first.addSuppressed(second);
		}
		return first;
	}

}
