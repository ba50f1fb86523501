package dev.gpucompute.sample.search;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;

import dev.gpucompute.KernelArgs;
import dev.gpucompute.KernelBlock;
import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;

/**
 * The search service's kernels: CUDA C under {@code src/main/resources/gpu/kernels/} and, for the
 * CPU backend, Java implementations of exactly the same algorithms.
 *
 * <p>The constants declare each kernel's name, parameter types and CPU implementation, without
 * CUDA code: the application registers them as {@code KernelSource} beans, and the starter pairs
 * each with the kernel file of the same name found under {@code gpu.kernels.locations}, which
 * supplies the CUDA code (so the kernels can be replaced or tuned without rebuilding). Code that
 * runs without the starter uses {@link #withCudaFromClasspath()}.
 *
 * <p>"Exactly the same" is meant literally: each Java twin performs the same floating-point
 * operations in the same order as its CUDA kernel (fused multiply-adds included, via
 * {@link Math#fma(float, float, float)}), so scores and rankings are bit-identical across backends
 * and a test on the CPU backend tests the GPU algorithm.
 *
 * <p>The sources are constants, shared by all threads; the implementations are stateless apart from
 * per-worker scratch arrays.
 */
public final class KnnKernels {

	/** Lanes of a warp; the scoring kernel gives each (vector, query) pair one warp. */
	static final int WARP = 32;

	/** Threads per block of the scoring kernel: 8 warps, so 8 vectors per block. */
	static final int SCORE_BLOCK = 256;

	/** Candidates a block of {@code knn_topk} sorts in shared memory (a power of two). */
	public static final int CHUNK = 2048;

	/** Largest k that {@code knn_topk} serves; beyond it rows are sorted whole. */
	public static final int MAX_CHUNKED_K = CHUNK / 2;

	/** Threads per block of {@code knn_topk}. */
	static final int TOPK_BLOCK = 512;

	/** Threads per block of the element-wise kernels. */
	static final int LINEAR_BLOCK = 256;

	/** The id that pads a chunk or a row: it sorts after every real slot. */
	static final int NO_ID = Integer.MAX_VALUE;

	/** Where {@code gpu.kernels.locations} finds the CUDA files by default. */
	public static final String LOCATION = "gpu/kernels/";

	/** {@code knn_score(int n, int dim, const float* vectors, const float* queries, float* scores)}. */
	public static final KernelSource SCORE = KernelSource.named("knn_score")
		.params(ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::score);

	/**
	 * {@code knn_topk(int m, int k, int useIds, const float* inScores, const int* inIds,
	 * float* outScores, int* outIds)}.
	 */
	public static final KernelSource TOPK = KernelSource.named("knn_topk")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER,
				ParamType.BUFFER)
		.cpu(KnnKernels::topk);

	/** {@code knn_sort_init(int n, int p, const float* scores, float* s, int* ids)}. */
	public static final KernelSource SORT_INIT = KernelSource.named("knn_sort_init")
		.params(ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::sortInit);

	/** {@code knn_bitonic_step(int p, int size, int stride, float* s, int* ids)}. */
	public static final KernelSource BITONIC_STEP = KernelSource.named("knn_bitonic_step")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::bitonicStep);

	/** {@code knn_scatter(long long total, int dim, const int* slots, const float* rows, float* vectors)}. */
	public static final KernelSource SCATTER = KernelSource.named("knn_scatter")
		.params(ParamType.LONG, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnKernels::scatter);

	/** Every kernel of the service. */
	public static final java.util.List<KernelSource> ALL = java.util.List.of(SCORE, TOPK, SORT_INIT, BITONIC_STEP,
			SCATTER);

	/**
	 * The kernels with their CUDA code read from {@code gpu/kernels/<name>.cu} on the class path, for
	 * use with a plain {@code GpuContext} (without the starter's kernel loading).
	 */
	public static java.util.List<KernelSource> withCudaFromClasspath() {
		return ALL.stream().map((source) -> source.cudaResource(LOCATION + source.name() + ".cu")).toList();
	}

	/** Per-worker scratch of the CPU twins: a warp's lanes and a top-k chunk. */
	private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

	private KnnKernels() {
	}

	/** "a ranks before b": the higher score, then the lower id. The same predicate as {@code knn_better}. */
	static boolean better(float scoreA, int idA, float scoreB, int idB) {
		return scoreA > scoreB || (scoreA == scoreB && idA < idB);
	}

	// ---- CPU twins ---------------------------------------------------------------------------
	// Each runs one CUDA block: it loops over the block's threads (or warps) where the CUDA code
	// has them run at once. The steps of a block never depend on each other within one
	// __syncthreads() phase, so running them one after another gives the same result.

	static void score(KernelBlock block, KernelArgs args) {
		int n = args.i32(0);
		int dim = args.i32(1);
		FloatBuffer vectors = args.floats(2);
		FloatBuffer queries = args.floats(3);
		FloatBuffer scores = args.floats(4);
		int warpsPerBlock = block.blockDim().x() / WARP;
		long q = block.y();
		Scratch scratch = SCRATCH.get();
		float[] query = scratch.query(dim);
		float[] row = scratch.row(dim);
		float[] lanes = scratch.lanes;
		// Bulk copies to arrays only change where the operands are read from, not the arithmetic.
		queries.get((int) (q * dim), query, 0, dim);
		for (int warp = 0; warp < warpsPerBlock; warp++) {
			long v = (long) block.x() * warpsPerBlock + warp;
			if (v >= n) {
				return;
			}
			vectors.get((int) (v * dim), row, 0, dim);
			for (int lane = 0; lane < WARP; lane++) {
				float acc = 0f;
				for (int j = lane; j < dim; j += WARP) {
					acc = Math.fma(query[j], row[j], acc);
				}
				lanes[lane] = acc;
			}
			// __shfl_down_sync tree: lane l adds lane l + offset; only lanes below offset feed lane 0.
			for (int offset = WARP / 2; offset > 0; offset >>= 1) {
				for (int lane = 0; lane < offset; lane++) {
					lanes[lane] += lanes[lane + offset];
				}
			}
			scores.put((int) (q * n + v), lanes[0]);
		}
	}

	static void topk(KernelBlock block, KernelArgs args) {
		int m = args.i32(0);
		int k = args.i32(1);
		boolean useIds = args.i32(2) != 0;
		FloatBuffer inScores = args.floats(3);
		IntBuffer inIds = useIds ? args.ints(4) : null;
		FloatBuffer outScores = args.floats(5);
		IntBuffer outIds = args.ints(6);
		Scratch scratch = SCRATCH.get();
		float[] score = scratch.score;
		int[] id = scratch.id;
		int chunk = block.x();
		long q = block.y();
		int keep = Math.min(k, CHUNK);
		long row = q * m;
		int base = chunk * CHUNK;
		for (int i = 0; i < CHUNK; i++) {
			int g = base + i;
			if (g < m) {
				score[i] = inScores.get((int) (row + g));
				id[i] = useIds ? inIds.get((int) (row + g)) : g;
			}
			else {
				score[i] = Float.NEGATIVE_INFINITY;
				id[i] = NO_ID;
			}
		}
		for (int size = 2; size <= CHUNK; size <<= 1) {
			for (int stride = size >> 1; stride > 0; stride >>= 1) {
				for (int t = 0; t < CHUNK / 2; t++) {
					int i = 2 * t - (t & (stride - 1));
					int j = i + stride;
					boolean bestFirst = (i & size) == 0;
					if (better(score[j], id[j], score[i], id[i]) == bestFirst) {
						float s = score[i];
						score[i] = score[j];
						score[j] = s;
						int d = id[i];
						id[i] = id[j];
						id[j] = d;
					}
				}
			}
		}
		long out = (q * block.gridDim().x() + chunk) * keep;
		for (int r = 0; r < keep; r++) {
			outScores.put((int) (out + r), score[r]);
			outIds.put((int) (out + r), id[r]);
		}
	}

	static void sortInit(KernelBlock block, KernelArgs args) {
		int n = args.i32(0);
		int p = args.i32(1);
		FloatBuffer scores = args.floats(2);
		FloatBuffer s = args.floats(3);
		IntBuffer ids = args.ints(4);
		long q = block.y();
		for (long i = block.firstIndex(); i < block.endIndex(p); i++) {
			int o = (int) (q * p + i);
			if (i < n) {
				s.put(o, scores.get((int) (q * n + i)));
				ids.put(o, (int) i);
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

		final float[] lanes = new float[WARP];

		final float[] score = new float[CHUNK];

		final int[] id = new int[CHUNK];

		private float[] query = new float[0];

		private float[] row = new float[0];

		float[] query(int dim) {
			if (this.query.length < dim) {
				this.query = new float[dim];
			}
			return this.query;
		}

		float[] row(int dim) {
			if (this.row.length < dim) {
				this.row = new float[dim];
			}
			return this.row;
		}

	}

}
