package dev.gpucompute.sample.search;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;

import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.KernelArgs;
import dev.gpucompute.KernelBlock;
import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;

/**
 * The search service's kernels: CUDA C under {@code src/main/resources/gpu/kernels/} and, for the
 * CPU backend, Java implementations of exactly the same arithmetic.
 *
 * <p>The constants declare each kernel's name, parameter types and CPU implementation, without
 * CUDA code: the application registers them as {@code KernelSource} beans, and the starter pairs
 * each with the kernel file of the same name found under {@code gpu.kernels.locations}, which
 * supplies the CUDA code (so the kernels can be replaced or tuned without rebuilding). Code that
 * runs without the starter uses {@link #withCudaFromClasspath()}.
 *
 * <p><b>Same bits on both backends.</b> A score is defined operation by operation, and both backends
 * perform exactly these operations (fused multiply-adds included, {@code fmaf} / {@link Math#fma}):
 * the dimensions are padded with zeros to a multiple of {@value #LANES}; logical lane {@code l} of
 * {@value #LANES} accumulates {@code fma(query[j], vector[j], acc)} over the dimensions
 * {@code j = l (mod 16)} in increasing order, starting from {@code +0}; the lanes are then added by a
 * fixed tree ({@link #laneTree}: {@code p[l] += p[l + off]} for {@code off} = 8, 4, 2, 1); a NaN
 * result becomes {@code -inf}, so that ranking is a total order. The CUDA kernel gives each
 * pair's lanes to 16 threads and adds them with {@code __shfl_down_sync}; the CPU twin does the lanes
 * as one SIMD register (the Vector API, {@link SimdTileScorer}) or, without the
 * {@code jdk.incubator.vector} module, as a plain loop ({@link TileScorer.Scalar}). The logical lane
 * count is fixed, not the hardware's vector width, so the bits do not depend on the machine, the
 * path or the JIT tier. The top-k selection is a total order, (score desc, slot asc): the CUDA kernel
 * sorts with a bitonic network, the CPU twin selects with a bounded heap, and both output exactly
 * the same entries. So scores and rankings are bit-identical across backends, and a test on the CPU
 * backend tests the GPU algorithm.
 *
 * <p>The sources are constants, shared by all threads; the implementations are stateless apart from
 * per-worker scratch arrays.
 */
public final class KnnKernels {

	private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(KnnKernels.class);

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

	/** The id that pads a chunk or a row: it sorts after every real slot. */
	static final int NO_ID = Integer.MAX_VALUE;

	/** Where {@code gpu.kernels.locations} finds the CUDA files by default. */
	public static final String LOCATION = "gpu/kernels/";

	/** The JVM option that enables the SIMD path of the CPU backend's scoring. */
	public static final String SIMD_FLAG = "--add-modules jdk.incubator.vector";

	/**
	 * {@code knn_score(int m, int dim, int count, long long first, const float* vectors,
	 * const float* queries, float* scores)}: {@code scores[q * m + i] = score(queries[q], vectors[first + i])}
	 * for {@code q < count}, {@code i < m}. Grid ({@code ceil(count / TILE_Q)}, {@code ceil(m / TILE_V)}),
	 * block {@value #SCORE_BLOCK}.
	 */
	public static final KernelSource SCORE = KernelSource.named("knn_score")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.LONG, ParamType.BUFFER, ParamType.BUFFER,
				ParamType.BUFFER)
		.cpu(KnnKernels::score);

	/**
	 * {@code knn_topk(int m, int k, int useIds, int idBase, const float* inScores, const int* inIds,
	 * float* outScores, int* outIds)}.
	 */
	public static final KernelSource TOPK = KernelSource.named("knn_topk")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER,
				ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::topk);

	/** {@code knn_sort_init(int n, int p, int idBase, const float* scores, float* s, int* ids)}. */
	public static final KernelSource SORT_INIT = KernelSource.named("knn_sort_init")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::sortInit);

	/** {@code knn_bitonic_step(int p, int size, int stride, float* s, int* ids)}. */
	public static final KernelSource BITONIC_STEP = KernelSource.named("knn_bitonic_step")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::bitonicStep);

	/** {@code knn_scatter(long long total, int dim, const int* slots, const float* rows, float* vectors)}. */
	public static final KernelSource SCATTER = KernelSource.named("knn_scatter")
		.params(ParamType.LONG, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::scatter);

	/**
	 * {@code knn_fused(int n, int dim, int count, int k, int rowsPerBlock, int groupQueries,
	 * const float* vectors, const float* queries, float* outScores, int* outIds)}: the top k of each
	 * query within each range of {@code rowsPerBlock} rows, scored and selected without a score matrix,
	 * {@code groupQueries} queries per block (CUDA: 1 to {@value #SCAN_MAX} or {@value #BATCH_Q}; the
	 * CPU twin, {@link FusedTwin}, any). Grid ({@code ceil(count / groupQueries)}, ranges), block
	 * {@value #FUSED_BLOCK}, dynamic shared memory {@link #fusedSharedBytes} on CUDA (the twin uses none),
	 * {@code 1 <= k <= }{@value #FUSED_MAX_K}. {@link KnnLaunchRules#checkFused} refuses any other launch
	 * before it is enqueued; a block that the kernel (or the twin) does not define writes nothing.
	 */
	public static final KernelSource FUSED = KernelSource.named("knn_fused")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT,
				ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(FusedTwin::run);

	/**
	 * {@code knn_merge(int runs, int k, const float* inScores, const int* inIds, float* outScores,
	 * int* outIds)}: each query's top k from {@code runs} lists of k entries sorted best first (the
	 * layout {@code knn_fused} writes: {@code (q * runs + r) * k + i}), written best first to
	 * {@code q * k + i}, padded with (-inf, {@value #NO_ID}). Grid ({@code queries}), a block per query
	 * of a multiple of 32 threads, at most {@value #MERGE_MAX_BLOCK}, with
	 * {@code runs <= }{@value #MERGE_RUNS_PER_THREAD}{@code  * threads} ({@link #mergeThreads}), k at
	 * least 1; no shared memory to give. {@link KnnLaunchRules#checkMerge} refuses any other launch before
	 * it is enqueued; a block of one that came all the same would write nothing (on both backends). The
	 * entries are selected, not recomputed: the same ones as {@code knn_topk}'s passes over the same
	 * candidates.
	 */
	public static final KernelSource MERGE = KernelSource.named("knn_merge")
		.params(ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::merge);

	/** Every kernel of the service. */
	public static final java.util.List<KernelSource> ALL = java.util.List.of(SCORE, TOPK, SORT_INIT, BITONIC_STEP,
			SCATTER, FUSED, MERGE);

	/**
	 * The kernels with their CUDA code read from {@code gpu/kernels/<name>.cu} on the class path, for
	 * use with a plain {@code GpuContext} (without the starter's kernel loading).
	 */
	public static java.util.List<KernelSource> withCudaFromClasspath() {
		return ALL.stream().map((source) -> source.cudaResource(LOCATION + source.name() + ".cu")).toList();
	}

	/** Per-worker scratch of the CPU twins: tiles, lanes and a top-k chunk. */
	private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

	/** The CPU backend's scoring path, chosen once: SIMD where the Vector API is usable, else scalar. */
	private static final TileScorer SCORER = chooseScorer();

	private KnnKernels() {
	}

	/**
	 * Loads the Vector API path by name, so that a JVM without {@code jdk.incubator.vector} never links
	 * it and runs the scalar path instead (same bits, slower).
	 */
	private static TileScorer chooseScorer() {
		if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) {
			return new TileScorer.Scalar();
		}
		try {
			TileScorer simd = (TileScorer) Class.forName(KnnKernels.class.getPackageName() + ".SimdTileScorer")
				.getDeclaredMethod("create")
				.invoke(null);
			return (simd != null) ? simd : new TileScorer.Scalar();
		}
		catch (ReflectiveOperationException | LinkageError ex) {
			log.debug("Vector API path unavailable", ex);
			return new TileScorer.Scalar();
		}
	}

	/**
	 * One line for the start-up log saying which scoring path the CPU backend uses and, on the scalar
	 * path, the JVM option that enables SIMD.
	 */
	public static String scoringPath() {
		if (SCORER instanceof TileScorer.Scalar) {
			return "CPU scoring: " + SCORER.description() + "; start the JVM with " + SIMD_FLAG
					+ " for the SIMD path (same results, several times faster)";
		}
		return "CPU scoring: " + SCORER.description();
	}

	/** Whether the CPU backend scores with the Vector API. */
	static boolean simdActive() {
		return !(SCORER instanceof TileScorer.Scalar);
	}

	static TileScorer scorer() {
		return SCORER;
	}

	/** "a ranks before b": the higher score, then the lower id. The same predicate as {@code knn_better}. */
	static boolean better(float scoreA, int idA, float scoreB, int idB) {
		return scoreA > scoreB || (scoreA == scoreB && idA < idB);
	}

	/**
	 * The fixed tree that adds a score's {@value #LANES} partial sums: {@code p[l] += p[l + off]} for
	 * {@code l < off}, {@code off} = 8, 4, 2, 1 (the order of {@code __shfl_down_sync} with width 16).
	 * Modifies {@code p}; returns {@code p[0]}.
	 */
	static float laneTree(float[] p) {
		for (int offset = LANES / 2; offset > 0; offset >>= 1) {
			for (int l = 0; l < offset; l++) {
				p[l] += p[l + offset];
			}
		}
		return p[0];
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

	// ---- CPU twins ---------------------------------------------------------------------------
	// Each runs one CUDA block. Where the CUDA code has threads run at once, the twin computes the
	// same values in another order of independent steps; every individual value is computed by the
	// same operations, so the results are the same bits.

	static void score(KernelBlock block, KernelArgs args) {
		int m = args.i32(0);
		int dim = args.i32(1);
		int count = args.i32(2);
		long first = args.i64(3);
		int q0 = block.x() * TILE_Q;
		int v0 = block.y() * TILE_V;
		int qRows = Math.min(TILE_Q, count - q0);
		int vRows = Math.min(TILE_V, m - v0);
		if (qRows <= 0 || vRows <= 0) {
			return;
		}
		FloatBuffer vectors = args.floats(4);
		FloatBuffer queries = args.floats(5);
		FloatBuffer scores = args.floats(6);
		int padded = paddedDimension(dim);
		Scratch scratch = SCRATCH.get();
		float[] queryTile = scratch.queryTile(padded);
		float[] vectorTile = scratch.vectorTile(padded);
		float[] out = scratch.out;
		// Bulk copies into heap tiles only change where the operands are read from, not the arithmetic.
		copyRows(queries, (long) q0 * dim, qRows, dim, padded, queryTile);
		int paddedRows = (vRows + 3) & ~3;
		if (!scratch.holdsVectorTile(args, block.y())) {
			copyRows(vectors, (first + v0) * dim, vRows, dim, padded, vectorTile);
			java.util.Arrays.fill(vectorTile, vRows * padded, paddedRows * padded, 0f);
		}
		SCORER.score(queryTile, qRows, vectorTile, paddedRows, padded, out, scratch.lanes);
		for (int qi = 0; qi < qRows; qi++) {
			int row = qi * TILE_V;
			for (int vi = 0; vi < vRows; vi++) {
				if (Float.isNaN(out[row + vi])) {
					out[row + vi] = Float.NEGATIVE_INFINITY;
				}
			}
			scores.put((int) ((long) (q0 + qi) * m + v0), out, row, vRows);
		}
	}

	/** Copies {@code rows} rows of {@code dim} floats into rows of {@code padded}, zero-filling each row's tail. */
	static void copyRows(FloatBuffer from, long offset, int rows, int dim, int padded, float[] to) {
		if (padded == dim) {
			// Rows are back to back in both: one bulk copy (per-row copies cost more than the scoring at dim 128).
			from.get((int) offset, to, 0, rows * dim);
			return;
		}
		for (int r = 0; r < rows; r++) {
			from.get((int) (offset + (long) r * dim), to, r * padded, dim);
			if (padded > dim) {
				java.util.Arrays.fill(to, r * padded + dim, (r + 1) * padded, 0f);
			}
		}
	}

	/**
	 * The CPU twin of {@code knn_topk}: the same output as sorting the padded chunk best-first and keeping
	 * the first {@code keep}, found with a bounded heap (about one comparison per candidate for small k)
	 * instead of a bitonic network (about 66,000 compare-exchanges per chunk).
	 */
	static void topk(KernelBlock block, KernelArgs args) {
		int m = args.i32(0);
		int k = args.i32(1);
		boolean useIds = args.i32(2) != 0;
		int idBase = args.i32(3);
		FloatBuffer inScores = args.floats(4);
		IntBuffer inIds = useIds ? args.ints(5) : null;
		FloatBuffer outScores = args.floats(6);
		IntBuffer outIds = args.ints(7);
		Scratch scratch = SCRATCH.get();
		float[] score = scratch.score;
		int[] id = scratch.id;
		int chunk = block.x();
		long q = block.y();
		int keep = Math.min(k, CHUNK);
		int base = chunk * CHUNK;
		// A chunk past the row (no launch of the engine's has one) ends as the kernel's does: all padding.
		int real = Math.max(0, Math.min(CHUNK, m - base));
		int row = (int) (q * m + Math.min(base, m));
		inScores.get(row, score, 0, real);
		if (useIds) {
			inIds.get(row, id, 0, real);
		}
		TopKHeap heap = scratch.heap;
		select(score, useIds ? id : null, idBase + base, real, heap.reset(keep));
		// A bitonic sort of the chunk would put its (-inf, NO_ID) padding after every real candidate.
		heap.sortPadded(keep);
		int out = (int) ((q * block.gridDim().x() + chunk) * keep);
		outScores.put(out, heap.scores(), 0, keep);
		outIds.put(out, heap.ids(), 0, keep);
	}

	/**
	 * Offers {@code count} candidates to {@code heap}.
	 * @param id the candidates' ids, or null for {@code firstId + i}
	 */
	static void select(float[] score, int[] id, int firstId, int count, TopKHeap heap) {
		for (int i = 0; i < count; i++) {
			heap.offer(score[i], (id != null) ? id[i] : firstId + i);
		}
	}

	/**
	 * The CPU twin of {@code knn_merge}: a k-way merge of the query's lists by (score desc, id asc, list
	 * asc), the order in which the kernel's block-wide argmax picks its winner each round, so every
	 * round takes the same entry. A block of a launch the kernel does not define writes nothing, as the
	 * kernel's does ({@link KnnLaunchRules#checkMerge} refuses such a launch before it is enqueued).
	 */
	static void merge(KernelBlock block, KernelArgs args) {
		int runs = args.i32(0);
		int k = args.i32(1);
		if (!KnnLaunchRules.mergeDefines(runs, k, block.blockDim().x())) {
			return;
		}
		FloatBuffer inScores = args.floats(2);
		IntBuffer inIds = args.ints(3);
		FloatBuffer outScores = args.floats(4);
		IntBuffer outIds = args.ints(5);
		long q = block.x();
		long first = q * runs * k;
		int out = (int) (q * k);
		int[] position = SCRATCH.get().positions(runs);
		for (int r = 0; r < k; r++) {
			int winner = -1;
			float winnerScore = Float.NEGATIVE_INFINITY;
			int winnerId = NO_ID;
			for (int run = 0; run < runs; run++) {
				int p = position[run];
				int at = (int) (first + (long) run * k + p);
				float s = (p < k) ? inScores.get(at) : Float.NEGATIVE_INFINITY;
				int id = (p < k) ? inIds.get(at) : NO_ID;
				// Runs in increasing order: an equal (score, id) keeps the lower run, as the kernel's order does.
				if (winner < 0 || better(s, id, winnerScore, winnerId)) {
					winner = run;
					winnerScore = s;
					winnerId = id;
				}
			}
			if (winnerId == NO_ID && winnerScore == Float.NEGATIVE_INFINITY) {
				// Nothing ranks after padding: every list is at its padding, and so is the rest.
				for (int i = r; i < k; i++) {
					outScores.put(out + i, Float.NEGATIVE_INFINITY);
					outIds.put(out + i, NO_ID);
				}
				return;
			}
			outScores.put(out + r, winnerScore);
			outIds.put(out + r, winnerId);
			position[winner]++;
		}
	}

	static void sortInit(KernelBlock block, KernelArgs args) {
		int n = args.i32(0);
		int p = args.i32(1);
		int idBase = args.i32(2);
		FloatBuffer scores = args.floats(3);
		FloatBuffer s = args.floats(4);
		IntBuffer ids = args.ints(5);
		long q = block.y();
		for (long i = block.firstIndex(); i < block.endIndex(p); i++) {
			int o = (int) (q * p + i);
			if (i < n) {
				s.put(o, scores.get((int) (q * n + i)));
				ids.put(o, idBase + (int) i);
			}
			else {
				s.put(o, Float.NEGATIVE_INFINITY);
				ids.put(o, NO_ID);
			}
		}
	}

	static void bitonicStep(KernelBlock block, KernelArgs args) {
		int p = args.i32(0);
		int size = args.i32(1);
		int stride = args.i32(2);
		FloatBuffer s = args.floats(3);
		IntBuffer ids = args.ints(4);
		int row = block.y() * p;
		for (long t = block.firstIndex(); t < block.endIndex(p / 2); t++) {
			int i = (int) (2 * t - (t & (stride - 1)));
			int j = i + stride;
			boolean bestFirst = (i & size) == 0;
			float si = s.get(row + i);
			float sj = s.get(row + j);
			int ii = ids.get(row + i);
			int ij = ids.get(row + j);
			if (better(sj, ij, si, ii) == bestFirst) {
				s.put(row + i, sj);
				s.put(row + j, si);
				ids.put(row + i, ij);
				ids.put(row + j, ii);
			}
		}
	}

	static void scatter(KernelBlock block, KernelArgs args) {
		long total = args.i64(0);
		int dim = args.i32(1);
		IntBuffer slots = args.ints(2);
		FloatBuffer rows = args.floats(3);
		FloatBuffer vectors = args.floats(4);
		for (long e = block.firstIndex(); e < block.endIndex(total); e++) {
			long r = e / dim;
			long j = e - r * dim;
			vectors.put((int) ((long) slots.get((int) r) * dim + j), rows.get((int) e));
		}
	}

	private static final class Scratch {

		final float[] lanes = new float[LANES];

		final float[] out = new float[TILE_Q * TILE_V];

		final float[] score = new float[CHUNK];

		final int[] id = new int[CHUNK];

		final TopKHeap heap = new TopKHeap(CHUNK);

		private int[] positions = new int[0];

		/** {@code runs} list positions of {@code knn_merge}'s twin, all 0. */
		int[] positions(int runs) {
			if (this.positions.length < runs) {
				this.positions = new int[runs];
			}
			java.util.Arrays.fill(this.positions, 0, runs, 0);
			return this.positions;
		}

		private float[] queryTile = new float[0];

		private float[] vectorTile = new float[0];

		/**
		 * The launch whose vector tile {@link #vectorTileY} {@link #vectorTile} holds. Blocks run in
		 * runs of consecutive linear indices (x fastest), so a worker meets the same vector tile once
		 * per query tile in a row and copies it only the first time. A launch is identified by its
		 * {@link KernelArgs} instance (one per launch), held weakly so that a finished launch's
		 * buffers are not kept reachable; a collection rewritten between searches is read by a new
		 * launch, so a stale tile is never reused. Within a launch the vectors are read-only.
		 */
		private java.lang.ref.WeakReference<KernelArgs> vectorTileLaunch = new java.lang.ref.WeakReference<>(null);

		private int vectorTileY = -1;

		float[] queryTile(int padded) {
			if (this.queryTile.length < TILE_Q * padded) {
				this.queryTile = new float[TILE_Q * padded];
			}
			return this.queryTile;
		}

		float[] vectorTile(int padded) {
			if (this.vectorTile.length < TILE_V * padded) {
				this.vectorTile = new float[TILE_V * padded];
				this.vectorTileY = -1;
			}
			return this.vectorTile;
		}

		/**
		 * Whether {@link #vectorTile} already holds vector tile {@code y} of this launch; if not, records
		 * that it is about to (the caller then copies it). Call after {@link #vectorTile(int)}.
		 */
		boolean holdsVectorTile(KernelArgs launch, int y) {
			if (this.vectorTileLaunch.get() != launch) {
				this.vectorTileLaunch = new java.lang.ref.WeakReference<>(launch);
			}
			else if (this.vectorTileY == y) {
				return true;
			}
			this.vectorTileY = y;
			return false;
		}

	}

}
