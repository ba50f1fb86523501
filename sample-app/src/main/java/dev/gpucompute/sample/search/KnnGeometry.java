package dev.gpucompute.sample.search;

import dev.gpucompute.InvalidLaunchConfigException;

/**
 * How the search kernels are launched: the tile and block sizes their CUDA code is written for (the
 * {@code #define}s of the {@code .cu} files, which a test compares with these constants), the limits
 * of k and of a merge's lists, and the sizes derived from them (a padded dimension, {@code knn_fused}'s
 * shared memory, {@code knn_merge}'s block). {@link KnnLaunchRules} says which launches the kernels
 * define; {@link KnnKernels} declares the kernels.
 *
 * <p>Constants and pure functions; no allocation unless a check fails.
 */
public final class KnnGeometry {

	/** Logical lanes of a score's partial sums (fixed, independent of the hardware). */
	static final int LANES = 16;

	/** Queries per tile of {@code knn_score} (a block's {@code blockIdx.x} picks the query tile). */
	static final int TILE_Q = 16;

	/** Stored vectors per tile of {@code knn_score} (a block's {@code blockIdx.y} picks the vector tile). */
	static final int TILE_V = 64;

	/** Threads per block of the scoring kernel: 16 lane groups of 16 threads. */
	static final int SCORE_BLOCK = 256;

	/** Largest slab of vectors one {@code knn_score} launch covers: CUDA's grid y limit times {@link #TILE_V}. */
	static final int MAX_SLAB = 65_535 * TILE_V;

	/** Candidates a block of {@code knn_topk} sorts in shared memory (a power of two). */
	public static final int CHUNK = 2048;

	/** Largest k that {@code knn_topk} serves; beyond it rows are sorted whole. */
	public static final int MAX_CHUNKED_K = CHUNK / 2;

	/** Threads per block of {@code knn_topk}. */
	static final int TOPK_BLOCK = 512;

	/** Threads per block of the element-wise kernels. */
	static final int LINEAR_BLOCK = 256;

	/** Threads per block of {@code knn_fused}: 64 groups of 4. */
	static final int FUSED_BLOCK = 256;

	/** Most queries {@code knn_fused} scores on its scan path (one query group, each row read once). */
	static final int SCAN_MAX = 8;

	/** Queries per block on {@code knn_fused}'s batch path (more than {@value #SCAN_MAX} queries). */
	static final int BATCH_Q = 32;

	/** Rows a {@code knn_fused} block scores per iteration on the scan path (one per group of 4 threads). */
	static final int SCAN_TILE = 64;

	/** Rows a {@code knn_fused} block scores per iteration on the batch path. */
	static final int BATCH_TILE = 32;

	/** Dimensions of the stored rows {@code knn_fused}'s batch path stages in shared memory at a time. */
	static final int BATCH_DK = 128;

	/**
	 * Largest k of {@code knn_fused}: its per-query lists live in shared memory. Larger k take the
	 * general path ({@code knn_score} + {@code knn_topk} or the whole-row sort).
	 */
	public static final int FUSED_MAX_K = 128;

	/**
	 * Largest k whose ranges' lists the fused path merges with {@code knn_merge} (one round, one block
	 * barrier, per rank); larger k take {@code knn_topk}'s passes.
	 */
	public static final int MERGE_MAX_K = 32;

	/** Lists ({@code knn_fused}'s ranges) each thread of a {@code knn_merge} block owns. */
	static final int MERGE_RUNS_PER_THREAD = 4;

	/** Most threads per block of {@code knn_merge}. */
	static final int MERGE_MAX_BLOCK = 256;

	/** Most lists per query {@code knn_merge} merges: {@value #MERGE_RUNS_PER_THREAD} per thread of its largest block. */
	public static final int MERGE_MAX_RUNS = MERGE_RUNS_PER_THREAD * MERGE_MAX_BLOCK;

	private KnnGeometry() {
	}

	/** The dimension padded to a multiple of {@value #LANES}. */
	static int paddedDimension(int dim) {
		return (dim + LANES - 1) / LANES * LANES;
	}

	/**
	 * The dynamic shared memory of a {@code knn_fused} block on CUDA with {@code groupQueries} queries
	 * per block (1 to {@value #SCAN_MAX}: the scan path; {@value #BATCH_Q}: the batch path): the
	 * block's queries, on the batch path a staged tile of rows, and per query a list of
	 * {@code pow2(pow2(k) + 2 * tile)} (score, id) slots plus a count and a threshold; the layout of
	 * {@code knn_lists} in {@code knn_fused.cu}.
	 */
	static long fusedSharedBytes(int dim, int groupQueries, int k) {
		int padded = paddedDimension(dim);
		int kept = powerOfTwo(k);
		if (groupQueries <= SCAN_MAX) {
			int queries = powerOfTwo(groupQueries);
			return 4L * queries * padded + listBytes(queries, powerOfTwo(kept + 2 * SCAN_TILE));
		}
		return 4L * BATCH_Q * (padded + 4) + 4L * BATCH_TILE * (BATCH_DK + 4)
				+ listBytes(BATCH_Q, powerOfTwo(kept + 2 * BATCH_TILE));
	}

	private static long listBytes(int queries, int slots) {
		return 8L * queries * slots + 12L * queries;
	}

	/**
	 * Threads of a {@code knn_merge} block for {@code runs} lists: the fewest warps that own every list
	 * at {@value #MERGE_RUNS_PER_THREAD} per thread (96 for the 264 ranges of one query group on an
	 * H100 or H200).
	 * @throws InvalidLaunchConfigException unless {@code 1 <= runs <= }{@value #MERGE_MAX_RUNS}
	 */
	static int mergeThreads(int runs) {
		if (runs < 1 || runs > MERGE_MAX_RUNS) {
			throw new InvalidLaunchConfigException(
					"knn_merge takes 1 to " + MERGE_MAX_RUNS + " lists per query, not " + runs);
		}
		int threads = (runs + MERGE_RUNS_PER_THREAD - 1) / MERGE_RUNS_PER_THREAD;
		return (threads + 31) / 32 * 32;
	}

	/** The smallest power of two at least {@code x} (1 for x <= 1). */
	static int powerOfTwo(int x) {
		return (x <= 1) ? 1 : Integer.highestOneBit(x - 1) << 1;
	}

}
