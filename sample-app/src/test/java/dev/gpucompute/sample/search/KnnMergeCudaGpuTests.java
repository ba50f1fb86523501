package dev.gpucompute.sample.search;

import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.Kernel;
import dev.gpucompute.sample.RequiresCuda;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code knn_merge} on CUDA against its CPU twin and against {@code knn_topk}'s passes on CUDA, on the
 * shapes {@link KnnMergeEmulatedTests} emulates: 1, 16 and 100 queries, k = 1, 10, 32 (and 33, 64), 1, 2,
 * 33, 264 and 1,024 lists, lists ending in or made of padding, equal scores across lists, blocks larger
 * than needed; then whole searches on the device's own split (264 ranges for one query group on an
 * H100 or H200), which must launch {@code knn_merge} once and {@code knn_topk} never and give the CPU
 * backend's entries. Every comparison is a linear scan that names the first differing entry. Skipped
 * without a device; failed when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(RequiresCuda.class)
class KnnMergeCudaGpuTests {

	private static MergeRun cuda;

	private static MergeRun cpu;

	private static SearchRun cudaSearch;

	private static SearchRun cpuSearch;

	@BeforeAll
	static void open() {
		cuda = new MergeRun(Backend.CUDA);
		cpu = new MergeRun(Backend.CPU);
		cudaSearch = new SearchRun(Backend.CUDA, 64L << 20);
		cpuSearch = new SearchRun(Backend.CPU, 64L << 20);
	}

	@AfterAll
	static void close() {
		for (AutoCloseable run : new AutoCloseable[] { cuda, cpu, cudaSearch, cpuSearch }) {
			if (run != null) {
				try {
					run.close();
				}
				catch (Exception ex) {
					throw new IllegalStateException(ex);
				}
			}
		}
	}

	@Test
	void knnMergeMatchesTheTwinAndKnnTopkOnCuda() {
		Random random = new Random(113);
		for (int runs : new int[] { 1, 2, 33, 264, 1024 }) {
			for (int k : new int[] { 1, 10, 32 }) {
				for (int queries : new int[] { 1, 16, 100 }) {
					MergeRun.Lists lists = MergeRun.lists(random, queries, runs, k, (queries + k) % 2 == 0);
					SearchRun.Result kernel = cuda.merge(lists);
					TopKAssertions.assertSameTopK(lists.shape() + ": the twin", cpu.merge(lists), kernel, k);
					TopKAssertions.assertSameTopK(lists.shape() + ": knn_topk's passes on CUDA", cuda.topkPasses(lists), kernel,
							k);
				}
			}
		}
	}

	@Test
	void kPastTheBoundLargerBlocksAndPaddingMatchTheTwin() {
		Random random = new Random(127);
		MergeRun.Lists[] cases = { MergeRun.lists(random, 4, 40, 33, true), MergeRun.lists(random, 4, 7, 64, false),
				MergeRun.lists(random, 3, 2, 10, true), MergeRun.lists(random, 3, 264, 10, false) };
		int[] threads = { KnnGeometry.mergeThreads(40), KnnGeometry.mergeThreads(7), 256, 128 };
		for (int i = 0; i < cases.length; i++) {
			MergeRun.Lists lists = cases[i];
			TopKAssertions.assertSameTopK(lists.shape() + ", " + threads[i] + " threads", cpu.merge(lists, threads[i]),
					cuda.merge(lists, threads[i]), lists.k());
		}
		int runs = 9;
		int k = 10;
		float[] scores = new float[runs * k];
		int[] ids = new int[runs * k];
		java.util.Arrays.fill(scores, Float.NEGATIVE_INFINITY);
		java.util.Arrays.fill(ids, KnnKernels.NO_ID);
		ids[5 * k] = 321;
		MergeRun.Lists padding = new MergeRun.Lists(1, runs, k, scores, ids);
		TopKAssertions.assertSameTopK("one real entry among padding", cpu.merge(padding), cuda.merge(padding), k);
	}

	@Test
	void aSmallSearchOnTheDevicesSplitLaunchesOneMergeAndMatchesTheCpuBackend() {
		Random random = new Random(131);
		int dim = 128;
		int n = 100_003;
		float[] vectors = Reference.storedRows(random, n, dim, true);
		for (int count : new int[] { 1, 16 }) {
			float[] queries = Reference.queries(random, count, dim);
			for (int k : new int[] { 1, 10, 32 }) {
				String shape = n + " x " + dim + ", " + count + " queries, k=" + k + ", "
						+ DeviceSearch.split(cudaSearch.context.device(), n, count).ranges() + " ranges";
				long merges = launches(cudaSearch, KnnKernels.MERGE.name());
				long topks = launches(cudaSearch, KnnKernels.TOPK.name());
				SearchRun.Result result = cudaSearch.search(vectors, dim, queries, k);
				assertThat(launches(cudaSearch, KnnKernels.MERGE.name()) - merges).as(shape).isEqualTo(1);
				assertThat(launches(cudaSearch, KnnKernels.TOPK.name()) - topks).as(shape).isZero();
				TopKAssertions.assertSameTopK(shape + ": the CPU backend", cpuSearch.search(vectors, dim, queries, k), result, k);
			}
		}
	}

	private static long launches(SearchRun run, String kernel) {
		return run.context.launcher().kernels().stream().filter((loaded) -> loaded.name().equals(kernel))
			.mapToLong((Kernel loaded) -> loaded.stats().launches()).sum();
	}

}
