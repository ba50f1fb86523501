package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;

/**
 * Searches a collection's shards: one shard on the calling thread, several in parallel (each on its
 * own device, one task per shard beyond the first) with their top k merged into the collection's by
 * the same total order (score, then slot) as one device would give, so the answers are the same
 * however the collection is spread.
 *
 * <p>Thread-safe. Owned and closed by the {@link CollectionStore}; after {@link #close()} the
 * calling thread searches every shard itself.
 */
final class ShardSearches implements AutoCloseable {

	/** One task per shard beyond the first. */
	private final ExecutorService executor = Executors.newCachedThreadPool((runnable) -> {
		Thread thread = new Thread(runnable, "collection-shard-search");
		thread.setDaemon(true);
		return thread;
	});

	/**
	 * The top {@code k} of each query over the collection's filled shards (read lock held). Every
	 * shard's search has ended when this returns, also after a failure or an interrupt.
	 */
	TopK search(VectorCollection collection, float[] queries, int queryCount, int k) {
		List<Shard> shards = collection.filledShards();
		int dim = collection.dimension();
		if (shards.size() == 1) {
			Shard shard = shards.get(0);
			return shard.engine().search(shard.storage(), shard.rows, dim, queries, queryCount, k);
		}
		List<Future<TopK>> parts = new ArrayList<>(shards.size());
		for (int i = 1; i < shards.size(); i++) {
			Shard shard = shards.get(i);
			Callable<TopK> task = () -> shard.engine().search(shard.storage(), shard.rows, dim, queries,
					queryCount, Math.min(k, shard.rows));
			try {
				parts.add(this.executor.submit(task));
			}
			catch (RejectedExecutionException ex) {
				// Closing: this thread searches the shard itself.
				FutureTask<TopK> inline = new FutureTask<>(task);
				inline.run();
				parts.add(inline);
			}
		}
		Shard first = shards.get(0);
		List<TopK> results = new ArrayList<>(shards.size());
		RuntimeException failure = null;
		try {
			results.add(first.engine().search(first.storage(), first.rows, dim, queries, queryCount, Math.min(k, first.rows)));
		}
		catch (RuntimeException ex) {
			failure = ex;
		}
		// Every shard's search ends before the read lock is released, also after a failure or an
		// interrupt: until then its device work may read the shard's storage.
		boolean interrupted = false;
		for (Future<TopK> part : parts) {
			while (true) {
				try {
					results.add(part.get());
					break;
				}
				catch (InterruptedException ex) {
					interrupted = true;
				}
				catch (ExecutionException ex) {
					RuntimeException cause = (ex.getCause() instanceof RuntimeException runtime) ? runtime
							: new IllegalStateException("A shard's search failed", ex.getCause());
					if (failure == null) {
						failure = cause;
					}
					else {
						failure.addSuppressed(cause);
					}
					break;
				}
			}
		}
		if (interrupted) {
			Thread.currentThread().interrupt();
		}
		if (failure != null) {
			throw failure;
		}
		int[] firstSlots = new int[shards.size()];
		for (int i = 0; i < firstSlots.length; i++) {
			firstSlots[i] = shards.get(i).firstSlot;
		}
		return TopK.merge(results, firstSlots, queryCount, k);
	}

	/** Takes no more tasks; searches after this run on the calling thread. Idempotent. */
	@Override
	public void close() {
		this.executor.shutdown();
	}

}
