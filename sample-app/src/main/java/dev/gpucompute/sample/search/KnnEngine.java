package dev.gpucompute.sample.search;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamKind;
import dev.gpucompute.StreamScope;

/**
 * Runs the device side of the service: writing rows into a collection's device storage (growing it
 * by re-allocation and a device-to-device copy) and exact k-nearest-neighbour search.
 *
 * <p><b>Search.</b> A batch of queries is split into up to {@code parallelism} groups of at least
 * {@code minQueriesPerGroup} queries, run as one stream-parallel group ({@link GpuLauncher#parallel(List)}).
 * A search made on a pooled stream the caller holds (a batch of the search batcher) runs on that
 * stream, leasing nothing more; a search of one group from any other thread leases one stream.
 * Each group, on its own stream, finds its queries' top k on the device ({@link DeviceSearch}:
 * {@code knn_fused} for k up to {@value KnnGeometry#FUSED_MAX_K}, scoring and selecting without a score
 * matrix, else slabs scored by {@code knn_score} and reduced by {@code knn_topk} or a whole-row sort)
 * and only those k per query are downloaded; the host merges the pieces by the kernels' total order
 * (score desc, slot asc), which gives exactly the whole-collection ranking.
 *
 * <p><b>Threading.</b> Thread-safe; callers hold the collection's read lock for a search and its
 * write lock for a write (see {@link VectorCollection}). Both return only after their device work
 * is complete, also when they fail, so no work outlives the lock that protects its data.
 * A write leases one stream and a search of several groups leases all of its groups' streams at once
 * ({@link dev.gpucompute.StreamPool#acquireAll}, through {@link GpuLauncher#parallel(List)}), so
 * concurrent requests never hold part of the pool while waiting for the rest; when the streams do not
 * become free in time the request fails with {@link ServiceProblem#busy} (503). A search never leases
 * while it holds a lease: a batch searches on the stream its batcher leased.
 */
public final class KnnEngine {

	private final GpuLauncher launcher;

	private final StreamPool pool;

	private final int parallelism;

	private final int minQueriesPerGroup;

	private final Duration deviceTimeout;

	private final DeviceSearch search;

	private final KnnLaunches launches;

	/**
	 * @param launcher the launcher to run on
	 * @param pool the stream pool writes lease from (searches lease through the launcher's groups)
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
		this.launches = new KnnLaunches(launcher, kernels::get);
		this.search = new DeviceSearch(this.launches, scratchBytes);
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

	// ---- writes ------------------------------------------------------------------------------

	/**
	 * Writes {@code rows} (row-major, {@code slots.length} rows) at the given rows of a shard's
	 * device storage, first growing it to {@code capacityRows} rows if it is smaller. Call with the
	 * collection's write lock held; returns when the device holds the data.
	 * @param slots rows of the shard (not collection slots)
	 * @throws GpuOutOfMemoryException when the device has no room for the storage
	 * @throws ServiceProblem (503, busy) when no pooled stream became free within the device timeout
	 */
	void write(Shard shard, int dim, int[] slots, float[] rows, long capacityRows) {
		withStream(shard, dim, capacityRows, (stream) -> {
			if (slots.length == 0) {
				return;
			}
			int first = contiguousFrom(slots);
			if (first >= 0) {
				// A pure append (the bulk-load case) or a run of consecutive replacements: one copy
				// straight into place, no slot buffer and no scatter launch.
				shard.storage.upload(HostArray.of(rows), (long) first * dim, stream);
				return;
			}
			long total = (long) slots.length * dim;
			try (DeviceBuffer slotBuffer = this.launcher.upload(HostArray.of(slots));
					DeviceBuffer rowBuffer = this.launcher.upload(HostArray.of(rows))) {
				this.launches.scatter(stream, LaunchConfig.linear(total, KnnGeometry.LINEAR_BLOCK), total, dim,
						slotBuffer, rowBuffer, shard.storage);
			}
		});
	}

	/** The first slot when {@code slots} are consecutive, else -1. */
	static int contiguousFrom(int[] slots) {
		for (int r = 1; r < slots.length; r++) {
			if (slots[r] != slots[0] + r) {
				return -1;
			}
		}
		return (slots.length > 0) ? slots[0] : -1;
	}

	/**
	 * Copies raw rows (little-endian float32, {@code rows.remaining()} bytes) to a shard's storage
	 * from its row {@code firstRow} on, first growing it to {@code capacityRows}; for loading a
	 * snapshot chunk by chunk into storage allocated once at its final size. Write lock held.
	 */
	void writeRaw(Shard shard, int dim, long firstRow, ByteBuffer rows, long capacityRows) {
		long offset = firstRow * dim * Float.BYTES;
		withStream(shard, dim, capacityRows, (stream) -> {
			if (rows.hasRemaining()) {
				shard.storage.upload(HostArray.of(rows), offset, stream);
			}
		});
	}

	/**
	 * Copies {@code rowCount} rows of a shard from its row {@code firstRow} on into {@code dst} (from
	 * its position, which it advances), as little-endian float32; for writing a snapshot in bounded
	 * chunks with no host copy of the collection. Read lock held; returns when the bytes are in
	 * {@code dst}.
	 */
	void read(Shard shard, int dim, long firstRow, int rowCount, ByteBuffer dst) {
		long rowBytes = (long) dim * Float.BYTES;
		int bytes = (int) (rowCount * rowBytes);
		ByteBuffer target = dst.slice().limit(bytes);
		CompletableFuture<Void>[] done = new CompletableFuture[1];
		withStream(shard, dim, 0, (stream) -> done[0] = shard.storage.download(HostArray.of(target), firstRow * rowBytes, stream));
		await(List.of(done[0]));
		dst.position(dst.position() + bytes);
	}

	/** Runs {@code work} on a leased stream after growing the storage if needed, then waits for it. */
	private void withStream(Shard shard, int dim, long capacityRows, Consumer<GpuStream> work) {
		StreamLease lease;
		try {
			lease = this.pool.acquire(this.deviceTimeout);
		}
		catch (PoolExhaustedException ex) {
			throw ServiceProblem.busy(1, this.deviceTimeout, ex);
		}
		try (lease) {
			GpuStream stream = lease.stream();
			RuntimeException failure = null;
			try (StreamScope scope = this.launcher.useStream(stream)) {
				if (capacityRows > shard.capacityRows) {
					grow(shard, dim, capacityRows, stream);
				}
				work.accept(stream);
			}
			catch (RuntimeException ex) {
				failure = ex;
			}
			// Also after a failure: nothing may still run on the storage once the lock is released.
			failure = synchronize(stream, failure);
			if (failure != null) {
				throw failure;
			}
		}
	}

	private void grow(Shard shard, int dim, long capacityRows, GpuStream stream) {
		long usedBytes = (long) shard.rows * dim * Float.BYTES;
		DeviceBuffer grown = this.launcher.allocate(capacityRows * dim, ElementType.FLOAT);
		try {
			if (usedBytes > 0) {
				grown.copyFrom(shard.storage, 0, 0, usedBytes, stream);
			}
		}
		catch (RuntimeException ex) {
			grown.close();
			throw ex;
		}
		DeviceBuffer old = shard.storage;
		shard.storage = grown;
		shard.capacityRows = capacityRows;
		if (old != null) {
			// Freed on its own stream once this copy and every search that used it are done.
			old.close();
		}
	}

	/** Frees a shard's device storage (write lock held). */
	void free(Shard shard) {
		DeviceBuffer storage = shard.storage;
		shard.storage = null;
		shard.capacityRows = 0;
		if (storage != null) {
			storage.close();
		}
	}

	// ---- search ------------------------------------------------------------------------------

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
		if (current.kind() == StreamKind.POOLED) {
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
			RuntimeException failure = null;
			try {
				enqueue.run();
			}
			catch (RuntimeException ex) {
				failure = ex;
			}
			// Also after a failure: nothing may still run on the collection once the read lock is released.
			failure = synchronize(stream, failure);
			if (failure != null) {
				throw failure;
			}
			await(downloads);
		}
		catch (GpuOutOfMemoryException ex) {
			throw ServiceProblem.searchMemoryExhausted(ex.getMessage());
		}
		return merge(pieces, queryCount, k);
	}

	/** Search results: {@code k} per query, query-major, best first. */
	record TopK(float[] scores, int[] slots) {

		/**
		 * The overall top {@code k} per query of several shards' results, whose slots count from each
		 * shard's first slot; ranked by the kernels' total order (score, then collection slot), so
		 * the result is the one a single device would give.
		 * @param parts each shard's result: {@code queryCount * kOf(part)} entries, best first
		 * @param firstSlots the collection slot of each shard's row 0
		 */
		static TopK merge(List<TopK> parts, int[] firstSlots, int queryCount, int k) {
			List<Piece> pieces = new ArrayList<>(parts.size());
			for (int p = 0; p < parts.size(); p++) {
				TopK part = parts.get(p);
				int kp = part.scores.length / queryCount;
				float[] scores = new float[queryCount * k];
				int[] slots = new int[queryCount * k];
				java.util.Arrays.fill(scores, Float.NEGATIVE_INFINITY);
				java.util.Arrays.fill(slots, KnnKernels.NO_ID);
				for (int q = 0; q < queryCount; q++) {
					for (int r = 0; r < kp; r++) {
						scores[q * k + r] = part.scores[q * kp + r];
						slots[q * k + r] = part.slots[q * kp + r] + firstSlots[p];
					}
				}
				pieces.add(new Piece(0, queryCount, scores, slots));
			}
			return KnnEngine.merge(pieces, queryCount, k);
		}

	}

	/**
	 * The top k of queries {@code [firstQuery, firstQuery + count)} within one shard or slab:
	 * {@code count * k} entries, best first per query, padded with {@code (-inf, NO_ID)}.
	 */
	private record Piece(int firstQuery, int count, float[] scores, int[] slots) {
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

	/**
	 * Merges the pieces' top k per query into the overall top k, by the kernels' total order
	 * (score desc, slot asc), so the result is the one a single whole-collection ranking would give.
	 */
	private static TopK merge(List<Piece> pieces, int queryCount, int k) {
		if (pieces.size() == 1 && pieces.get(0).count() == queryCount) {
			// One piece of every query (one group, one sub-batch, one slab: every small search) is the
			// answer: best first and padded like the merge's start, which each of its entries beats or equals.
			return new TopK(pieces.get(0).scores(), pieces.get(0).slots());
		}
		float[] scores = new float[queryCount * k];
		int[] slots = new int[queryCount * k];
		java.util.Arrays.fill(scores, Float.NEGATIVE_INFINITY);
		java.util.Arrays.fill(slots, KnnKernels.NO_ID);
		float[] mergedScores = new float[k];
		int[] mergedSlots = new int[k];
		for (Piece piece : pieces) {
			for (int q = 0; q < piece.count(); q++) {
				int at = (piece.firstQuery() + q) * k;
				int from = q * k;
				int a = 0;
				int b = 0;
				for (int r = 0; r < k; r++) {
					if (KnnKernels.better(piece.scores()[from + b], piece.slots()[from + b], scores[at + a], slots[at + a])) {
						mergedScores[r] = piece.scores()[from + b];
						mergedSlots[r] = piece.slots()[from + b++];
					}
					else {
						mergedScores[r] = scores[at + a];
						mergedSlots[r] = slots[at + a++];
					}
				}
				System.arraycopy(mergedScores, 0, scores, at, k);
				System.arraycopy(mergedSlots, 0, slots, at, k);
			}
		}
		return new TopK(scores, slots);
	}

	/** Waits for {@code stream}; a failure of its own is added to {@code failure}, which it returns. */
	private static RuntimeException synchronize(GpuStream stream, RuntimeException failure) {
		try {
			stream.synchronize();
		}
		catch (RuntimeException ex) {
			if (failure == null) {
				return ex;
			}
			failure.addSuppressed(ex);
		}
		return failure;
	}

	/**
	 * Waits for every download, then throws the first failure. Each future is waited on itself, not
	 * through {@code allOf}: a thread waiting on a copy's own future is the one the runtime lets
	 * finish the copy (on CUDA it then sees the copy done within a poll, without the two thread
	 * wake-ups of the completion hand-off; see docs/runtime.md, "Completions").
	 */
	private void await(List<CompletableFuture<Void>> downloads) {
		long deadline = System.nanoTime() + this.deviceTimeout.toNanos();
		RuntimeException failure = null;
		for (CompletableFuture<Void> download : downloads) {
			try {
				download.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
			}
			catch (ExecutionException | CompletionException ex) {
				if (failure == null) {
					Throwable cause = ex.getCause();
					failure = (cause instanceof RuntimeException runtime) ? runtime
							: new GpuException("Downloading search results failed", cause);
				}
			}
			catch (TimeoutException ex) {
				throw new GpuException("Search results did not arrive within " + this.deviceTimeout);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new GpuException("Interrupted while waiting for search results");
			}
		}
		if (failure != null) {
			throw failure;
		}
	}

	private static int ceilDiv(long a, long b) {
		return DeviceSearch.ceilDiv(a, b);
	}

}
