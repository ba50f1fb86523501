package dev.gpucompute.sample.search;

import java.util.List;

import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;

/**
 * The search service's kernels, declared: each kernel's name, its CUDA signature (the {@code extern "C"}
 * entry point of {@code src/main/resources/gpu/kernels/<name>.cu}, without {@code __restrict__} and
 * {@code __launch_bounds__}), the parameter types launches are checked against, and its CPU body.
 * {@link KnnLaunches} launches them with typed arguments in the same order, {@link KnnTwins} and
 * {@link FusedTwin} hold the CPU bodies, {@link KnnGeometry} the shapes they are launched in. A test
 * reads each {@code .cu} file and compares its entry point with the signature here and with the
 * declared types, so the three cannot drift.
 *
 * <p>The constants carry no CUDA code: the application registers them as {@code KernelSource} beans,
 * and the starter pairs each with the kernel file of the same name found under
 * {@code gpu.kernels.locations}, which supplies the CUDA code (so the kernels can be replaced or tuned
 * without rebuilding). Code that runs without the starter uses {@link #withCudaFromClasspath()}.
 *
 * <p><b>Same bits on both backends.</b> A score is defined operation by operation, and both backends
 * perform exactly these operations (fused multiply-adds included, {@code fmaf} / {@link Math#fma}):
 * the dimensions are padded with zeros to a multiple of {@value KnnGeometry#LANES}; logical lane
 * {@code l} of {@value KnnGeometry#LANES} accumulates {@code fma(query[j], vector[j], acc)} over the
 * dimensions {@code j = l (mod 16)} in increasing order, starting from {@code +0}; the lanes are then
 * added by a fixed tree ({@link TileScorer#laneTree}: {@code p[l] += p[l + off]} for {@code off} = 8,
 * 4, 2, 1); a NaN result becomes {@code -inf}, so that ranking is a total order. The CUDA kernel gives
 * each pair's lanes to 16 threads and adds them with {@code __shfl_down_sync}; the CPU twin does the
 * lanes as one SIMD register (the Vector API, {@link SimdTileScorer}) or, without the
 * {@code jdk.incubator.vector} module, as a plain loop ({@link TileScorer.Scalar}); {@link CpuScoring}
 * picks one. The logical lane count is fixed, not the hardware's vector width, so the bits do not
 * depend on the machine, the path or the JIT tier. The top-k selection is a total order
 * ({@link #better}: score desc, slot asc): the CUDA kernel sorts with a bitonic network, the CPU twin
 * selects with a bounded heap, and both output exactly the same entries. So scores and rankings are
 * bit-identical across backends, and a test on the CPU backend tests the GPU algorithm.
 *
 * <p>The sources are immutable constants, shared by all threads.
 */
public final class KnnKernels {

	/** Where {@code gpu.kernels.locations} finds the CUDA files by default. */
	public static final String LOCATION = "gpu/kernels/";

	/** The id that pads a chunk, a row or a list ({@code KNN_NO_ID}): it sorts after every real slot. */
	static final int NO_ID = Integer.MAX_VALUE;

	static final String SCORE_SIGNATURE = "extern \"C\" __global__ void knn_score(int m, int dim, int count, "
			+ "long long first, const float* vectors, const float* queries, float* scores)";

	/**
	 * {@value #SCORE_SIGNATURE}: {@code scores[q * m + i] = score(queries[q], vectors[first + i])} for
	 * {@code q < count}, {@code i < m}. Grid ({@code ceil(count / TILE_Q)}, {@code ceil(m / TILE_V)}), block
	 * {@value KnnGeometry#SCORE_BLOCK}.
	 */
	public static final KernelSource SCORE = KernelSource.named("knn_score")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.LONG, ParamType.BUFFER, ParamType.BUFFER,
				ParamType.BUFFER)
		.cpu(KnnTwins::score);

	static final String TOPK_SIGNATURE = "extern \"C\" __global__ void knn_topk(int m, int k, int useIds, int idBase, "
			+ "const float* inScores, const int* inIds, float* outScores, int* outIds)";

	/**
	 * {@value #TOPK_SIGNATURE}: the best {@code min(k, CHUNK)} of each chunk of
	 * {@value KnnGeometry#CHUNK} candidates of each row (a row per {@code blockIdx.y}), best first; the
	 * ids are {@code inIds} when {@code useIds} is not 0, else {@code idBase} plus the position in the row.
	 * Grid (chunks, rows), block {@value KnnGeometry#TOPK_BLOCK}.
	 */
	public static final KernelSource TOPK = KernelSource.named("knn_topk")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER,
				ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnTwins::topk);

	static final String SORT_INIT_SIGNATURE = "extern \"C\" __global__ void knn_sort_init(int n, int p, int idBase, "
			+ "const float* scores, float* s, int* ids)";

	/**
	 * {@value #SORT_INIT_SIGNATURE}: each row's {@code n} scores with their ids ({@code idBase} plus the
	 * position), padded to {@code p} (a power of two) with (-inf, {@code NO_ID}), for the whole-row sort.
	 */
	public static final KernelSource SORT_INIT = KernelSource.named("knn_sort_init")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnTwins::sortInit);

	static final String BITONIC_STEP_SIGNATURE = "extern \"C\" __global__ void knn_bitonic_step(int p, int size, "
			+ "int stride, float* s, int* ids)";

	/** {@value #BITONIC_STEP_SIGNATURE}: one compare-exchange step of a bitonic sort of each row, best first. */
	public static final KernelSource BITONIC_STEP = KernelSource.named("knn_bitonic_step")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnTwins::bitonicStep);

	static final String SCATTER_SIGNATURE = "extern \"C\" __global__ void knn_scatter(long long total, int dim, "
			+ "const int* slots, const float* rows, float* vectors)";

	/** {@value #SCATTER_SIGNATURE}: writes row {@code r} of {@code rows} to row {@code slots[r]} of {@code vectors}. */
	public static final KernelSource SCATTER = KernelSource.named("knn_scatter")
		.params(ParamType.LONG, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnTwins::scatter);

	static final String FUSED_SIGNATURE = "extern \"C\" __global__ void knn_fused(int n, int dim, int count, int k, "
			+ "int rowsPerBlock, int groupQueries, const float* vectors, const float* queries, float* outScores, "
			+ "int* outIds)";

	/**
	 * {@value #FUSED_SIGNATURE}: the top k of each query within each range of {@code rowsPerBlock} rows,
	 * scored and selected without a score matrix, {@code groupQueries} queries per block (CUDA: 1 to
	 * {@value KnnGeometry#SCAN_MAX} or {@value KnnGeometry#BATCH_Q}; the CPU twin, {@link FusedTwin}, any).
	 * Grid ({@code ceil(count / groupQueries)}, ranges), block {@value KnnGeometry#FUSED_BLOCK}, dynamic
	 * shared memory {@link KnnGeometry#fusedSharedBytes} on CUDA (the twin uses none),
	 * {@code 1 <= k <= }{@value KnnGeometry#FUSED_MAX_K}. {@link KnnLaunchRules#checkFused} refuses any
	 * other launch before it is enqueued; a block that the kernel (or the twin) does not define writes
	 * nothing.
	 */
	public static final KernelSource FUSED = KernelSource.named("knn_fused")
		.params(ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT, ParamType.INT,
				ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(FusedTwin::run);

	static final String MERGE_SIGNATURE = "extern \"C\" __global__ void knn_merge(int runs, int k, "
			+ "const float* inScores, const int* inIds, float* outScores, int* outIds)";

	/**
	 * {@value #MERGE_SIGNATURE}: each query's top k from {@code runs} lists of k entries sorted best
	 * first (the layout {@code knn_fused} writes: {@code (q * runs + r) * k + i}), written best first to
	 * {@code q * k + i}, padded with (-inf, {@code NO_ID}). Grid ({@code queries}), a block per query of a
	 * multiple of 32 threads, at most {@value KnnGeometry#MERGE_MAX_BLOCK}, with
	 * {@code runs <= }{@value KnnGeometry#MERGE_RUNS_PER_THREAD}{@code  * threads}
	 * ({@link KnnGeometry#mergeThreads}), k at least 1; no shared memory to give.
	 * {@link KnnLaunchRules#checkMerge} refuses any other launch before it is enqueued; a block of one
	 * that came all the same would write nothing (on both backends). The entries are selected, not
	 * recomputed: the same ones as {@code knn_topk}'s passes over the same candidates.
	 */
	public static final KernelSource MERGE = KernelSource.named("knn_merge")
		.params(ParamType.INT, ParamType.INT, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER, ParamType.BUFFER)
		.cpu(KnnTwins::merge);

	/** Every kernel of the service. */
	public static final List<KernelSource> ALL = List.of(SCORE, TOPK, SORT_INIT, BITONIC_STEP, SCATTER, FUSED, MERGE);

	private KnnKernels() {
	}

	/**
	 * The kernels with their CUDA code read from {@code gpu/kernels/<name>.cu} on the class path, for
	 * use with a plain {@code GpuContext} (without the starter's kernel loading).
	 */
	public static List<KernelSource> withCudaFromClasspath() {
		return ALL.stream().map((source) -> source.cudaResource(LOCATION + source.name() + ".cu")).toList();
	}

	/**
	 * "a ranks before b": the higher score, then the lower id. The kernels' total order, the same
	 * predicate as {@code knn_better} in the CUDA code; the host merges the kernels' lists by it too.
	 */
	static boolean better(float scoreA, int idA, float scoreB, int idB) {
		return scoreA > scoreB || (scoreA == scoreB && idA < idB);
	}

}
