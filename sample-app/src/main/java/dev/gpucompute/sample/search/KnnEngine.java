package dev.gpucompute.sample.search;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamScope;
import dev.gpucompute.sample.search.TopK.Piece;

/**
 * One device's engine: its shards' storage ({@link #storage()}: writes, growth, reads) and exact
 * k-nearest-neighbour search over a shard, planned here.
 *
 * <p><b>Search.</b> A batch of queries is split into up to {@code parallelism} groups of at least
 * {@code minQueriesPerGroup} queries, run as one stream-parallel group ({@link GpuLauncher#parallel(List)}).
 * A search made on a pooled stream the caller holds (a batch of the search batcher) runs on that
 * stream, leasing nothing more; a search of one group from any other thread leases one stream.
 * Each group, on its own stream, finds its queries' top k on the device ({@link DeviceSearch}:
 * {@code knn_fused} for k up to {@value KnnGeometry#FUSED_MAX_K}, scoring and selecting without a score
 * matrix, else slabs scored by {@code knn_score} and reduced by {@code knn_topk} or a whole-row sort)
 * and only those k per query are downloaded; the host merges the pieces by the kernels' total order
 * (score desc, slot asc, {@link TopK#mergePieces}), which gives exactly the whole-collection ranking.
 *
 * <p><b>Threading.</b> Thread-safe; callers hold the collection's read lock for a search (see
 * {@link VectorCollection}). A search returns only after its device work is complete, also when it
 * fails ({@link DeviceWork}), so no work outlives the lock that protects its data. A search of several
 * groups leases all of its groups' streams at once ({@link dev.gpucompute.StreamPool#acquireAll},
 * through {@link GpuLauncher#parallel(List)}), so concurrent requests never hold part of the pool while
 * waiting for the rest; when the streams do not become free in time the request fails with
 * {@link ServiceProblem#busy} (503). A search never leases while it holds a lease: a batch searches on
 * the stream its batcher leased.
 */
public final class KnnEngine {

	private final GpuLauncher launcher;

	private final StreamPool pool;

	private final int parallelism;

	private final int minQueriesPerGroup;

	private final Duration deviceTimeout;

	private final DeviceSearch search;

	private final ShardStorage storage;

	/**
	 * @param launcher the launcher to run on
	 * @param pool the stream pool writes and reads lease from (searches lease through the launcher's groups)
	 * @param kernels the service's kernels, as loaded by the application (see {@link KnnKernels})
	 * @param parallelism most stream-parallel groups one search splits into; capped at the pool's
	 * maximum size and, per search, at its priority limit, since a group needs all of its streams at once
	 * @param minQueriesPerGroup fewest queries worth a group of their own
	 * @param scratchBytes most scratch memory one group allocates at a time
	 * @param deviceTimeout longest wait for a search's or write's device work
	 */
	public KnnEngine(GpuLauncher launcher, StreamPool pool, LoadedKernels kernels, int parallelism,
			int minQueriesPerGroup, long scratchBytes, Duration deviceTimeout) {
		this.launcher = launcher;
		this.pool = pool;
		this.parallelism = Math.max(1, Math.min(parallelism, pool.maxSize()));
		this.minQueriesPerGroup = Math.max(1, minQueriesPerGroup);
		this.deviceTimeout = deviceTimeout;
		KnnLaunches launches = new KnnLaunches(launcher, kernels::get);
		this.search = new DeviceSearch(launches, scratchBytes);
		this.storage = new ShardStorage(pool, launches, deviceTimeout);
	}

	/** The kernels by source, as the application loaded them. */
	@FunctionalInterface
	public interface LoadedKernels {

		Kernel get(dev.gpucompute.KernelSource source);

	}

	/** Most streams one search uses. */
	public int parallelism() {
		return this.parallelism;
	}

	/** The device storage of the shards on this device. */
	ShardStorage storage() {
		return this.storage;
	}

	/**
	 * The top {@code k} slots and scores of each query, best first. Call with the read lock held and
	 * {@code 1 <= k <= size}.
	 * @param queries {@code queryCount} rows of the collection's dimension, already normalised for cosine
	 * @return the scores and slots, {@code queryCount * k} of each, query-major
	 * @throws ServiceProblem (503, busy) when the group's streams did not all become free within the
	 * pool's acquire timeout ({@code gpu.streams.acquire-timeout}), which {@link GpuLauncher#parallel(List)} uses
	 */
	TopK search(DeviceBuffer vectors, int n, int dim, float[] queries, int queryCount, int k) {
		GpuStream current = this.launcher.currentStream();
		if (current.kind() == GpuStream.Kind.POOLED) {
			return searchOn(current, vectors, n, dim, queries, queryCount, k);
		}
		// Never more groups than the pool leases at once at the current stream's priority (a priority limit
		// may be below the pool's maximum): such a group could never be leased.
		int groups = Math.max(1, Math.min(Math.min(this.parallelism, this.pool.priorityLimit(current.priority())),
				ceilDiv(queryCount, this.minQueriesPerGroup)));
		if (groups == 1) {
			// One stream from the pool, like a write: the pool bounds the searches on the device and its
			// meters show them, without the fork and join events of a group of one.
			StreamLease lease;
			try {
				lease = this.pool.acquire(current.priority());
			}
			catch (PoolExhaustedException ex) {
				throw ServiceProblem.busy(1, this.pool.acquireTimeout(), ex);
			}
			try (lease; StreamScope scope = this.launcher.useStream(lease.stream())) {
				return searchOn(lease.stream(), vectors, n, dim, queries, queryCount, k);
			}
		}
		int perGroup = ceilDiv(queryCount, groups);
		groups = ceilDiv(queryCount, perGroup);
		List<CompletableFuture<Void>> downloads = new ArrayList<>();
		List<Piece> pieces = new ArrayList<>();
		List<Consumer<GpuStream>> branches = new ArrayList<>(groups);
		for (int g = 0; g < groups; g++) {
			int from = g * perGroup;
			int to = Math.min(queryCount, from + perGroup);
			branches.add((stream) -> searchGroup(stream, vectors, n, dim, queries, from, to, k, pieces, downloads));
		}
		try {
			// The join events make the current stream wait for every branch, also after a failure.
			return complete(current, () -> this.launcher.parallel(branches), pieces, downloads, queryCount, k);
		}
		catch (PoolExhaustedException ex) {
			// Only the group's acquireAll leases from the pool, before any branch runs.
			throw ServiceProblem.busy(groups, this.pool.acquireTimeout(), ex);
		}
	}

	/**
	 * The whole search as one group on {@code stream}, the calling thread's current stream: a pooled
	 * stream the caller holds (a batch of the search batcher holds its lease, and must not lease more
	 * while it does: with {@code gpu.streams.max-size: 1} it would wait for itself until the acquire
	 * timeout, and on any pool it would halve the streams that can work), or the one stream a search
	 * of one group leased.
	 */
	private TopK searchOn(GpuStream stream, DeviceBuffer vectors, int n, int dim, float[] queries, int queryCount,
			int k) {
		List<CompletableFuture<Void>> downloads = new ArrayList<>();
		List<Piece> pieces = new ArrayList<>();
		return complete(stream,
				() -> searchGroup(stream, vectors, n, dim, queries, 0, queryCount, k, pieces, downloads), pieces,
				downloads, queryCount, k);
	}

	/**
	 * Runs {@code enqueue}, which puts a search and the downloads of its {@code pieces} on the device,
	 * waits for {@code stream} and the downloads, and merges the pieces.
	 * @param stream the stream that, once synchronized, has run all of the search's device work
	 * @throws ServiceProblem (503, device-memory-exhausted) when the device ran out of memory
	 */
	private TopK complete(GpuStream stream, Runnable enqueue, List<Piece> pieces,
			List<CompletableFuture<Void>> downloads, int queryCount, int k) {
		try {
			DeviceWork.runThenSynchronize(stream, enqueue);
			DeviceWork.await(downloads, this.deviceTimeout);
		}
		catch (GpuOutOfMemoryException ex) {
			throw ServiceProblem.searchMemoryExhausted(ex.getMessage());
		}
		return TopK.mergePieces(pieces, queryCount, k);
	}

	private void searchGroup(GpuStream stream, DeviceBuffer vectors, int n, int dim, float[] queries, int from,
			int to, int k, List<Piece> pieces, List<CompletableFuture<Void>> downloads) {
		this.search.search(stream, vectors, n, dim, queries, from, to, k, (first, count, scores, slots) -> {
			Piece piece = new Piece(first, count, new float[count * k], new int[count * k]);
			pieces.add(piece);
			downloads.add(scores.download(HostArray.of(piece.scores()), stream));
			downloads.add(slots.download(HostArray.of(piece.slots()), stream));
		});
	}

	private static int ceilDiv(long a, long b) {
		return DeviceSearch.ceilDiv(a, b);
	}

}
