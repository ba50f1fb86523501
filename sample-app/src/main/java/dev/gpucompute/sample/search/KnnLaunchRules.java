package dev.gpucompute.sample.search;

import dev.gpucompute.InvalidLaunchConfigException;

import static dev.gpucompute.sample.search.KnnGeometry.BATCH_Q;
import static dev.gpucompute.sample.search.KnnGeometry.FUSED_MAX_K;
import static dev.gpucompute.sample.search.KnnGeometry.MERGE_MAX_BLOCK;
import static dev.gpucompute.sample.search.KnnGeometry.MERGE_RUNS_PER_THREAD;
import static dev.gpucompute.sample.search.KnnGeometry.SCAN_MAX;

/**
 * The launches of {@code knn_fused} and {@code knn_merge} that their code defines, checked on the host
 * before a launch is enqueued ({@link DeviceSearch} does), so that a launch the search's rule should
 * never make fails its own request with an {@link InvalidLaunchConfigException}. On CUDA the kernels
 * cannot fail one request by themselves: a trap, or any fault, is a sticky error that loses the
 * context and every later search with it. A block of an undefined launch that reached a device all
 * the same returns without writing, in the CUDA code and in the CPU twins (which use the predicates
 * here).
 *
 * <p>Stateless; no allocation unless a check fails.
 */
final class KnnLaunchRules {

	private KnnLaunchRules() {
	}

	/** Whether {@code knn_merge} defines a block of {@code threads} threads for {@code runs} lists of k. */
	static boolean mergeDefines(int runs, int k, int threads) {
		return threads % 32 == 0 && threads > 0 && threads <= MERGE_MAX_BLOCK && runs >= 1
				&& runs <= MERGE_RUNS_PER_THREAD * threads && k >= 1;
	}

	/**
	 * Refuses a {@code knn_merge} launch the kernel does not define, before it is enqueued.
	 * @throws InvalidLaunchConfigException naming the kernel, the shape and the rule it breaks
	 */
	static void checkMerge(int runs, int k, int threads) {
		if (!mergeDefines(runs, k, threads)) {
			throw new InvalidLaunchConfigException("knn_merge does not define a launch of " + runs + " lists of k = "
					+ k + " in blocks of " + threads + " threads: it takes k >= 1 and blocks of a multiple of 32 "
					+ "threads, at most " + MERGE_MAX_BLOCK + ", with at most " + MERGE_RUNS_PER_THREAD
					+ " lists per thread; refused before the launch");
		}
	}

	/**
	 * Whether {@code knn_fused} defines blocks of {@code groupQueries} queries at this k: on CUDA 1 to
	 * {@value KnnGeometry#SCAN_MAX} (the scan) or {@value KnnGeometry#BATCH_Q} (the batch path), on the CPU
	 * backend (its twin) any number from 1; k from 1 to {@value KnnGeometry#FUSED_MAX_K} on both.
	 */
	static boolean fusedDefines(boolean cuda, int groupQueries, int k) {
		boolean group = cuda ? (groupQueries >= 1 && groupQueries <= SCAN_MAX) || groupQueries == BATCH_Q
				: groupQueries >= 1;
		return group && k >= 1 && k <= FUSED_MAX_K;
	}

	/**
	 * Refuses a {@code knn_fused} launch the kernel does not define, before it is enqueued: a group size
	 * or k it does not take ({@link #fusedDefines}), or a grid whose x is not
	 * {@code ceil(count / groupQueries)} (a block with no query, or a query with no block).
	 * @param cuda whether the launch is for the CUDA kernel (else for the CPU twin)
	 * @throws InvalidLaunchConfigException naming the kernel, the shape and the rule it breaks
	 */
	static void checkFused(boolean cuda, int count, int k, int groupQueries, int gridX) {
		if (!fusedDefines(cuda, groupQueries, k)) {
			throw new InvalidLaunchConfigException("knn_fused does not define blocks of " + groupQueries
					+ " queries at k = " + k
					+ (cuda ? " on CUDA: it takes 1 to " + SCAN_MAX + " or " + BATCH_Q + " queries"
							: " on the CPU backend: it takes at least 1 query")
					+ " per block and k from 1 to " + FUSED_MAX_K + "; refused before the launch");
		}
		if (count < 1 || gridX != (count + groupQueries - 1) / groupQueries) {
			throw new InvalidLaunchConfigException("knn_fused does not define a grid of " + gridX + " blocks for "
					+ count + " queries in groups of " + groupQueries + ": it takes one block per group, "
					+ "ceil(queries / group); refused before the launch");
		}
	}

}
