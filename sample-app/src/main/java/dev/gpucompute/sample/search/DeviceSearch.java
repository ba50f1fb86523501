package dev.gpucompute.sample.search;

import org.jspecify.annotations.Nullable;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.LaunchConfig;

/**
 * The device side of one group's search on one stream: the queries' top k within a shard, left on
 * the device for the caller to download. Two paths, chosen by {@link #fused}:
 * <ul>
 * <li><b>fused</b> ({@code k <= }{@value KnnGeometry#FUSED_MAX_K}, and on CUDA the block's shared
 * memory within the device's limit): {@code knn_fused} reads the shard once per query group and
 * keeps each query's top k per range of rows in shared memory (no score matrix), then the ranges'
 * sorted lists are merged: by one {@code knn_merge} launch, a block per query, for
 * {@code k <= }{@value KnnGeometry#MERGE_MAX_K} and at most {@value KnnGeometry#MERGE_MAX_RUNS} ranges
 * (on an H100 or H200 a search has up to 264 ranges, two blocks per SM over its query groups: one to
 * 32 queries are then two kernel launches in all), else by {@code knn_topk}'s passes over chunks of
 * {@value KnnGeometry#CHUNK} candidates (two passes where the ranges hold more than that). The merge's
 * speed has not been measured on a GPU. One or a few queries ({@code <= }
 * {@value KnnGeometry#SCAN_MAX}) take {@code knn_fused}'s memory-bound scan, more queries its
 * register-blocked batch path ({@value KnnGeometry#BATCH_Q} per block).</li>
 * <li><b>general</b> (larger k, or a dimension whose query tile does not fit in shared memory): slabs of
 * the shard are scored into a score matrix ({@code knn_score}) whose rows are reduced by repeated
 * {@code knn_topk} passes, or sorted whole ({@code knn_sort_init} + {@code knn_bitonic_step}) for
 * {@code k > }{@value KnnGeometry#MAX_CHUNKED_K}.</li>
 * </ul>
 * Both give the same entries: scores are the same bits and the selections keep the top k by one total
 * order. Every temporary buffer is allocated, used and freed on the group's stream.
 *
 * <p>Thread-safe: immutable; every call works on the stream it is given.
 */
final class DeviceSearch {

	/** Fewest vectors per slab worth scoring before fewer queries per sub-batch are preferred. */
	static final int MIN_SLAB = 16 * KnnGeometry.CHUNK;

	/**
	 * Resident {@code knn_fused} blocks per multiprocessor on CUDA ({@code __launch_bounds__(256, 2)});
	 * the CPU backend gets 16 blocks per worker: its twins run a block on one worker, and small blocks
	 * balance over workers that the OS also gives to other work.
	 */
	private static final int CUDA_BLOCKS_PER_SM = 2;

	private static final int CPU_BLOCKS_PER_WORKER = 16;

	/** Most rows (y) of a grid, on CUDA and on the CPU backend. */
	static final int MAX_GRID_ROWS = 65_535;

	/**
	 * Most queries one sub-batch launches at once: {@code knn_topk} and {@code knn_sort_init} take a
	 * block row per query.
	 */
	static final int MAX_QUERIES_PER_LAUNCH = MAX_GRID_ROWS;

	/**
	 * Most queries per {@code knn_fused} block on the CPU backend. Its twin reads each tile of stored
	 * rows from memory once per block, for all of the block's queries, so larger groups than CUDA's 32
	 * read the collection fewer times (at 100 x 384, groups of 32 cost about 10% more CPU time than the
	 * general path; one group of 100 does not).
	 */
	static final int CPU_GROUP_QUERIES = 128;

	private final GpuLauncher launcher;

	private final KnnLaunches launches;

	private final long scratchBytes;

	private final DeviceInfo device;

	private final boolean cuda;

	/** Receives a result: {@code count * k} scores and slots, query-major, best first, on the stream. */
	@FunctionalInterface
	interface Results {

		void accept(int firstQuery, int count, DeviceBuffer scores, DeviceBuffer slots);

	}

	/**
	 * @param launches the search kernels of the device to search on
	 * @param scratchBytes most scratch memory one group allocates at a time
	 */
	DeviceSearch(KnnLaunches launches, long scratchBytes) {
		this.launcher = launches.launcher();
		this.launches = launches;
		this.scratchBytes = scratchBytes;
		this.device = launcher.context().device();
		this.cuda = this.device.backend() == Backend.CUDA;
	}


	/** How many {@code knn_fused} blocks a launch aims at on {@code device} (see {@link Split}). */
	private static int targetBlocks(DeviceInfo device) {
		return Math.max(1, device.multiprocessors())
				* ((device.backend() == Backend.CUDA) ? CUDA_BLOCKS_PER_SM : CPU_BLOCKS_PER_WORKER);
	}

	/**
	 * Whether {@code knn_fused} serves a search of {@code queries} queries on {@code device}:
	 * {@code k <= }{@value KnnGeometry#FUSED_MAX_K} and, on CUDA, its block's shared memory
	 * ({@link KnnGeometry#fusedSharedBytes}) within the device's limit per block (the batch path keeps
	 * 32 queries of the full dimension there: on an H100's 227 KB up to 1,152 dimensions at k = 128 and
	 * 1,408 at k = 10; the scan's 1 to 8 queries fit at any dimension up to 4,096). The CPU twin needs
	 * no shared memory.
	 */
	static boolean fused(DeviceInfo device, int dim, int queries, int k) {
		return k <= KnnGeometry.FUSED_MAX_K && (device.backend() != Backend.CUDA
				|| KnnGeometry.fusedSharedBytes(dim, groupQueries(device, queries), k) <= device.maxSharedMemoryPerBlock());
	}

	/**
	 * Queries per {@code knn_fused} block: all of them up to {@value KnnGeometry#SCAN_MAX} (the scan),
	 * else {@value KnnGeometry#BATCH_Q} on CUDA (the batch path's layout) and up to
	 * {@value #CPU_GROUP_QUERIES} on the CPU backend.
	 */
	static int groupQueries(DeviceInfo device, int queries) {
		if (queries <= KnnGeometry.SCAN_MAX) {
			return Math.max(1, queries);
		}
		return (device.backend() == Backend.CUDA) ? KnnGeometry.BATCH_Q : Math.min(queries, CPU_GROUP_QUERIES);
	}

	/** Queries {@code [from, to)} (rows of {@code queries}) against the shard's {@code n} rows. */
	void search(GpuStream stream, DeviceBuffer vectors, int n, int dim, float[] queries, int from, int to, int k,
			Results results) {
		// A sub-batch never needs more shared memory than the whole group: the scan path's grows with its
		// queries up to SCAN_MAX, and the batch path's is larger than any scan's.
		if (fused(this.device, dim, to - from, k)) {
			searchFused(stream, vectors, n, dim, queries, from, to, k, results);
		}
		else {
			searchGeneral(stream, vectors, n, dim, queries, from, to, k, results);
		}
	}

	// ---- fused ---------------------------------------------------------------------------------

	/**
	 * How {@code knn_fused} splits a shard: {@code ranges} ranges of {@code rowsPerBlock} rows (a
	 * multiple of {@value KnnGeometry#SCAN_TILE}), enough for {@code targetBlocks} blocks over the
	 * query groups, never a range smaller than one tile and never more ranges than a grid has rows
	 * (the CPU backend's target is 16 blocks per worker, and it may have 4,096 workers).
	 */
	record Split(int ranges, int rowsPerBlock) {

		static Split of(int n, int groups, int targetBlocks) {
			int ranges = Math.max(1,
					Math.min(Math.min(ceilDiv(targetBlocks, groups), ceilDiv(n, KnnGeometry.SCAN_TILE)), MAX_GRID_ROWS));
			int rowsPerBlock = ceilDiv(ceilDiv(n, ranges), KnnGeometry.SCAN_TILE) * KnnGeometry.SCAN_TILE;
			return new Split(ceilDiv(n, rowsPerBlock), rowsPerBlock);
		}

	}

	/** The split of a fused search of {@code queries} queries over {@code n} rows on {@code device}. */
	static Split split(DeviceInfo device, int n, int queries) {
		return Split.of(n, ceilDiv(queries, groupQueries(device, queries)), targetBlocks(device));
	}

	/** Scratch of a fused sub-batch of {@code queries}: the ranges' lists and the merge's output or candidates. */
	static long fusedScratch(int queries, Split split, int k) {
		long merge = merges(split.ranges(), k) ? 8L * k : selectionBytes(split.ranges() * k, k);
		return queries * (8L * split.ranges() * k + merge);
	}

	/**
	 * Whether the fused path merges {@code ranges} lists of k with one {@code knn_merge} launch
	 * ({@code k <= }{@value KnnGeometry#MERGE_MAX_K}, {@code ranges <= }{@value KnnGeometry#MERGE_MAX_RUNS};
	 * it runs k rounds of a block-wide argmax, so a large k is left to {@code knn_topk}'s sorts), rather
	 * than with {@code knn_topk}'s passes.
	 */
	static boolean merges(int ranges, int k) {
		return k <= KnnGeometry.MERGE_MAX_K && ranges <= KnnGeometry.MERGE_MAX_RUNS;
	}

	/** The fused path, whatever {@link #fused} says (for {@link #search} and tests). */
	void searchFused(GpuStream stream, DeviceBuffer vectors, int n, int dim, float[] queries, int from, int to,
			int k, Results results) {
		int count = Math.min(to - from, MAX_QUERIES_PER_LAUNCH);
		while (count > 1 && fusedScratch(count, split(this.device, n, count), k) > this.scratchBytes) {
			count = ceilDiv(count, 2);
		}
		for (int first = from; first < to; first += count) {
			int batch = Math.min(count, to - first);
			int group = groupQueries(this.device, batch);
			int blocks = ceilDiv(batch, group);
			// Before anything is allocated or enqueued: a launch the kernel does not define fails this request
			// alone, where on CUDA a kernel that faulted would lose the context for every later search.
			KnnLaunchRules.checkFused(this.cuda, batch, k, group, blocks);
			Split s = split(this.device, n, batch);
			int shared = this.cuda ? (int) KnnGeometry.fusedSharedBytes(dim, group, k) : 0;
			long entries = (long) batch * s.ranges() * k;
			DeviceBuffer[] lists = null;
			try (DeviceBuffer queryBuffer = uploadQueries(queries, first, batch, dim)) {
				lists = allocatePair(entries);
				this.launches.fused(stream,
						LaunchConfig.of(Dim3.of(blocks, s.ranges()), Dim3.of(KnnGeometry.FUSED_BLOCK))
							.withSharedMemory(shared),
						n, dim, batch, k, s.rowsPerBlock(), group, vectors, queryBuffer, lists[0], lists[1]);
				DeviceBuffer[] best = merges(s.ranges(), k) ? merge(stream, lists[0], lists[1], s.ranges(), batch, k)
						: chunkedTopK(stream, lists[0], lists[1], s.ranges() * k, batch, k, 0);
				deliver(results, first, batch, best);
			}
			finally {
				closeAll(lists);
			}
		}
	}

	// ---- general -------------------------------------------------------------------------------

	/**
	 * How the general path works: {@code queries} at a time (a sub-batch) against {@code slab} stored
	 * vectors at a time, so that one sub-batch's scratch stays within the limit.
	 */
	record Plan(int queries, int slab) {
	}

	/**
	 * The largest sub-batch (all of the group's queries where possible) with a slab of at least
	 * {@link #MIN_SLAB} vectors (or the whole collection) within {@code scratchBytes}: batching
	 * pays because every stored vector is read once per sub-batch, not once per query.
	 */
	static Plan plan(int n, int k, int queries, long scratchBytes) {
		int count = Math.max(1, Math.min(queries, MAX_QUERIES_PER_LAUNCH));
		while (true) {
			int slab = largestSlab(n, k, count, scratchBytes);
			if (slab >= Math.min(n, MIN_SLAB) || count == 1) {
				return new Plan(count, Math.max(1, slab));
			}
			count = ceilDiv(count, 2);
		}
	}

	private static int largestSlab(int n, int k, int count, long scratchBytes) {
		int limit = Math.min(n, KnnGeometry.MAX_SLAB);
		if ((long) count * scratchPerQuery(limit, k) <= scratchBytes) {
			return limit;
		}
		// Scratch grows with the slab: find the largest fitting multiple of CHUNK by bisection.
		int low = 0;
		int high = limit / KnnGeometry.CHUNK;
		while (low < high) {
			int mid = (low + high + 1) >>> 1;
			if ((long) count * scratchPerQuery(mid * KnnGeometry.CHUNK, k) <= scratchBytes) {
				low = mid;
			}
			else {
				high = mid - 1;
			}
		}
		// A slab must still hold k candidates for the whole-row path; scratch then goes over a little.
		return Math.max(low * KnnGeometry.CHUNK, Math.min(limit, Math.max(k, KnnGeometry.CHUNK)));
	}

	/**
	 * Scratch bytes one query needs for a slab of {@code m} vectors on the general path: its score row
	 * plus the candidate buffers of its top-k path (what {@link #chunkedTopK} or {@link #sortedTopK}
	 * allocate).
	 */
	static long scratchPerQuery(int m, int k) {
		return 4L * m + selectionBytes(m, k);
	}

	/** Bytes of the buffers that reduce a row of {@code m} candidates to its top k, per query. */
	private static long selectionBytes(int m, int k) {
		if (k <= KnnGeometry.MAX_CHUNKED_K) {
			long keep = Math.min(k, KnnGeometry.CHUNK);
			long first = ceilDiv(m, KnnGeometry.CHUNK) * keep;
			long second = ceilDiv(first, KnnGeometry.CHUNK) * keep;
			return 8L * first + 8L * second;
		}
		long p = Long.highestOneBit(Math.max(1, Math.max(m, k) - 1)) << 1;
		return 8L * p + 8L * k;
	}

	/** The general path, whatever {@link #fused} says (for {@link #search} and tests). */
	void searchGeneral(GpuStream stream, DeviceBuffer vectors, int n, int dim, float[] queries, int from,
			int to, int k, Results results) {
		Plan plan = plan(n, k, to - from, this.scratchBytes);
		for (int first = from; first < to; first += plan.queries()) {
			int count = Math.min(plan.queries(), to - first);
			// One score matrix for all slabs: the stream orders each slab's scoring after the previous
			// slab's top k, and on the CPU backend a fresh buffer per slab costs a page fault per 4 KiB
			// (large buffers are mapped), which at 100 queries x 1M vectors was a quarter of the time.
			try (DeviceBuffer queryBuffer = uploadQueries(queries, first, count, dim);
					DeviceBuffer scoreBuffer = this.launcher
						.allocate((long) count * Math.min(plan.slab(), n), ElementType.FLOAT)) {
				for (int start = 0; start < n; start += plan.slab()) {
					int m = Math.min(plan.slab(), n - start);
					this.launches.score(stream,
							LaunchConfig.of(Dim3.of(ceilDiv(count, KnnGeometry.TILE_Q), ceilDiv(m, KnnGeometry.TILE_V)),
									Dim3.of(KnnGeometry.SCORE_BLOCK)),
							m, dim, count, start, vectors, queryBuffer, scoreBuffer);
					DeviceBuffer[] best = (k <= KnnGeometry.MAX_CHUNKED_K)
							? chunkedTopK(stream, scoreBuffer, null, m, count, k, start)
							: sortedTopK(stream, scoreBuffer, m, count, k, start);
					deliver(results, first, count, best);
				}
			}
		}
	}

	/** Hands a result to the caller, then frees it on the stream (after what the caller enqueued). */
	private static void deliver(Results results, int first, int count, DeviceBuffer[] best) {
		try {
			results.accept(first, count, best[0], best[1]);
		}
		finally {
			closeAll(best);
		}
	}

	// ---- selection -----------------------------------------------------------------------------

	/**
	 * One {@code knn_merge} launch: each of {@code count} queries' top k from its {@code runs} sorted
	 * lists of k ({@code knn_fused}'s output). Package-private for the test of its refusals.
	 * @return the compact top k: scores and slots, {@code count * k} each
	 * @throws dev.gpucompute.InvalidLaunchConfigException before anything is allocated or enqueued, for a
	 * shape the kernel does not define ({@link KnnLaunchRules#checkMerge})
	 */
	DeviceBuffer[] merge(GpuStream stream, DeviceBuffer scores, DeviceBuffer ids, int runs, int count, int k) {
		int threads = KnnGeometry.mergeThreads(runs);
		KnnLaunchRules.checkMerge(runs, k, threads);
		DeviceBuffer[] out = allocatePair((long) count * k);
		try {
			this.launches.merge(stream, LaunchConfig.of(Dim3.of(count), Dim3.of(threads)), runs, k, scores, ids, out[0],
					out[1]);
			return out;
		}
		catch (RuntimeException ex) {
			closeAll(out);
			throw ex;
		}
	}

	/**
	 * Repeated {@code knn_topk} passes until one chunk per query is left.
	 * @param ids the candidates' ids, or null when they are positions in the row plus {@code idBase}
	 * @return the compact top k: scores and slots, {@code count * k} each
	 */
	private DeviceBuffer[] chunkedTopK(GpuStream stream, DeviceBuffer scores, @Nullable DeviceBuffer ids, int n,
			int count, int k, int idBase) {
		int keep = Math.min(k, KnnGeometry.CHUNK);
		// Passes alternate between two buffer pairs; the first pass writes the most candidates, so
		// pair a (sized by it) and pair b (sized by the second) fit every later pass too.
		DeviceBuffer[] a = null;
		DeviceBuffer[] b = null;
		DeviceBuffer[] previous = (ids != null) ? new DeviceBuffer[] { scores, ids } : null;
		int m = n;
		try {
			for (int pass = 0;; pass++) {
				int chunks = ceilDiv(m, KnnGeometry.CHUNK);
				long entries = (long) count * chunks * keep;
				DeviceBuffer[] out;
				if (pass % 2 == 0) {
					a = (a != null) ? a : allocatePair(entries);
					out = a;
				}
				else {
					b = (b != null) ? b : allocatePair(entries);
					out = b;
				}
				DeviceBuffer inScores = (previous != null) ? previous[0] : scores;
				DeviceBuffer inIds = (previous != null) ? previous[1] : scores; // not read when useIds = 0
				this.launches.topk(stream, LaunchConfig.of(Dim3.of(chunks, count), Dim3.of(KnnGeometry.TOPK_BLOCK)), m, k,
						(previous != null) ? 1 : 0, idBase, inScores, inIds, out[0], out[1]);
				if (chunks == 1) {
					closeAll((out == a) ? b : a);
					return out;
				}
				previous = out;
				m = chunks * keep;
			}
		}
		catch (RuntimeException ex) {
			closeAll(a);
			closeAll(b);
			throw ex;
		}
	}

	/**
	 * Whole-row bitonic sort for large k, then a device-to-device copy of each row's first k entries.
	 * @return the compact top k: scores and slots, {@code count * k} each
	 */
	private DeviceBuffer[] sortedTopK(GpuStream stream, DeviceBuffer scores, int n, int count, int k, int idBase) {
		// p >= k too: the last slab may hold fewer than k vectors; its padding fills the k entries.
		int p = Integer.highestOneBit(Math.max(1, Math.max(n, k) - 1)) << 1;
		DeviceBuffer[] rows = allocatePair((long) count * p);
		try {
			int block = KnnGeometry.LINEAR_BLOCK;
			this.launches.sortInit(stream, LaunchConfig.of(Dim3.of(ceilDiv(p, block), count), Dim3.of(block)), n, p,
					idBase, scores, rows[0], rows[1]);
			LaunchConfig steps = LaunchConfig.of(Dim3.of(ceilDiv(p / 2, block), count), Dim3.of(block));
			for (int size = 2; size <= p; size <<= 1) {
				for (int stride = size >> 1; stride > 0; stride >>= 1) {
					this.launches.bitonicStep(stream, steps, p, size, stride, rows[0], rows[1]);
				}
			}
			DeviceBuffer[] best = allocatePair((long) count * k);
			try {
				for (int q = 0; q < count; q++) {
					best[0].copyFrom(rows[0], 4L * q * p, 4L * q * k, 4L * k, stream);
					best[1].copyFrom(rows[1], 4L * q * p, 4L * q * k, 4L * k, stream);
				}
			}
			catch (RuntimeException ex) {
				closeAll(best);
				throw ex;
			}
			return best;
		}
		finally {
			closeAll(rows);
		}
	}

	/**
	 * Queries {@code [first, first + count)} on the device, on the current stream. They go through a
	 * host buffer: one pass over them on the host (the put), where slicing the array and uploading the
	 * slice took two. Closing the host buffer while its upload is pending is fine: its memory goes back
	 * to the pool when the upload has run.
	 */
	private DeviceBuffer uploadQueries(float[] queries, int first, int count, int dim) {
		try (HostBuffer staged = this.launcher.allocateHost((long) count * dim * Float.BYTES)) {
			staged.put(0, HostArray.of(queries, first * dim, count * dim));
			DeviceBuffer buffer = this.launcher.allocate((long) count * dim, ElementType.FLOAT);
			try {
				buffer.upload(staged, buffer.stream());
			}
			catch (RuntimeException ex) {
				buffer.close();
				throw ex;
			}
			return buffer;
		}
	}

	/** A scores buffer and an ids buffer of {@code entries} each, on the current stream. */
	private DeviceBuffer[] allocatePair(long entries) {
		DeviceBuffer values = this.launcher.allocate(entries, ElementType.FLOAT);
		try {
			return new DeviceBuffer[] { values, this.launcher.allocate(entries, ElementType.INT) };
		}
		catch (RuntimeException ex) {
			values.close();
			throw ex;
		}
	}

	private static void closeAll(DeviceBuffer @Nullable [] buffers) {
		if (buffers != null) {
			for (DeviceBuffer buffer : buffers) {
				buffer.close();
			}
		}
	}

	static int ceilDiv(long a, long b) {
		return (int) ((a + b - 1) / b);
	}

}
