package dev.gpucompute.sample.search;

import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.sample.RequiresCuda;

import static dev.gpucompute.sample.search.TopKAssertions.assertSameTopK;

/**
 * The search kernels on CUDA against their CPU twins, on the same inputs: every entry (row and score
 * bits) must be equal. Raw {@code knn_fused} lists for dimensions 1 to 385 (multiples of 16 and not,
 * of 4 and not: the float4 and the scalar loads), row counts that are no multiple of any tile, the
 * scan path's 1 to 8 queries and the batch path's groups of 32 (and a partial last group), k from 1 to
 * 128, ties and scores that overflow to +-inf and NaN, and several scan groups in one launch; whole
 * searches through the path the rule picks for k = 1, 10, 100, 128, 129, 1000, 1025 and 4096 and
 * batches of 1, 3, 16, 100 and 257 (fused,
 * knn_score + knn_topk, and the whole-row sort); the fused and the general path against each other on
 * CUDA; and a 300k x 128 scan with the device's own split into ranges. Results are compared with
 * {@link TopKAssertions} (linear; AssertJ's {@code containsExactly} is quadratic in the entries and did
 * not finish for the million entries of k = 4,096). Skipped without a device; failed when
 * {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(RequiresCuda.class)
class KnnFusedCudaGpuTests {

	private static SearchRun cuda;

	private static SearchRun cpu;

	@BeforeAll
	static void open() {
		cuda = new SearchRun(Backend.CUDA, 64L << 20);
		cpu = new SearchRun(Backend.CPU, 64L << 20);
	}

	@AfterAll
	static void close() {
		if (cuda != null) {
			cuda.close();
		}
		if (cpu != null) {
			cpu.close();
		}
	}

	@Test
	void rawListsOfKnnFusedMatchTheTwin() {
		int[] dims = { 1, 3, 4, 7, 15, 16, 17, 31, 33, 64, 100, 127, 128, 130, 255, 256, 384, 385 };
		int[] counts = { 1, 2, 3, 5, 8, 9, 16, 33, 64, 100 };
		int[] ks = { 1, 10, 100, 128, 7, 64 };
		int[] sizes = { 1, 63, 65, 1000, 4099, 777 };
		int[] rowsPerBlock = { 64, 320, 128, 1024 };
		int round = 0;
		for (int dim : dims) {
			for (int variant = 0; variant < 3; variant++, round++) {
				Random random = new Random(31L * dim + variant);
				int n = sizes[round % sizes.length];
				int count = counts[round % counts.length];
				int k = ks[round % ks.length];
				int rows = rowsPerBlock[round % rowsPerBlock.length];
				float[] vectors = Reference.storedRows(random, n, dim, true);
				float[] queries = Reference.queries(random, count, dim);
				String shape = n + " x " + dim + ", " + count + " queries, k=" + k + ", " + rows + " rows per block";
				assertSameTopK(shape, cpu.fusedLists(vectors, dim, queries, k, rows),
						cuda.fusedLists(vectors, dim, queries, k, rows), k, DeviceSearch.ceilDiv(n, rows));
			}
		}
	}

	@Test
	void severalScanGroupsInOneLaunchMatchTheTwin() {
		// The engine runs the scan with one group; the kernel defines groups of 1 to 8 queries in general.
		Random random = new Random(59);
		int[][] cases = { { 10, 3, 17 }, { 10, 8, 128 }, { 5, 2, 33 }, { 9, 1, 7 } };
		for (int[] c : cases) {
			int count = c[0];
			int group = c[1];
			int dim = c[2];
			float[] vectors = Reference.storedRows(random, 2000, dim, true);
			float[] queries = Reference.queries(random, count, dim);
			assertSameTopK(count + " queries in groups of " + group + ", dimension " + dim,
					cpu.fusedLists(vectors, dim, queries, 10, 256, group),
					cuda.fusedLists(vectors, dim, queries, 10, 256, group), 10, DeviceSearch.ceilDiv(2000, 256));
		}
	}

	@Test
	void launchesPastTheDataMatchTheTwin() {
		// A range without rows and a chunk without candidates (no launch of the engine's has one): all padding.
		Random random = new Random(73);
		int dim = 9;
		float[] vectors = Reference.storedRows(random, 300, dim, true);
		for (int count : new int[] { 3, 33 }) {
			float[] queries = Reference.queries(random, count, dim);
			int group = (count <= KnnGeometry.SCAN_MAX) ? count : KnnGeometry.BATCH_Q;
			assertSameTopK(count + " queries", cpu.fusedLists(vectors, dim, queries, 10, 128, group, 4),
					cuda.fusedLists(vectors, dim, queries, 10, 128, group, 4), 10, 4);
		}
		float[] scores = Reference.rows(random, 2 * 100, 1);
		assertSameTopK("knn_topk, a chunk past 100 candidates", cpu.topk(scores, null, 2, 10, 0, 2),
				cuda.topk(scores, null, 2, 10, 0, 2), 10, 2);
	}

	@Test
	void wholeSearchesMatchTheCpuBackendForEveryPath() {
		int[] ks = { 1, 10, 100, 128, 129, 1000, 1025, 4096 };
		int[] batches = { 1, 3, 16, 100, 257 };
		int[] dims = { 7, 128, 385, 16, 33 };
		int round = 0;
		for (int k : ks) {
			for (int batch : batches) {
				int dim = dims[round++ % dims.length];
				Random random = new Random(7L * k + batch);
				int n = Math.max(5000, k + 999);
				float[] vectors = Reference.storedRows(random, n, dim, true);
				float[] queries = Reference.queries(random, batch, dim);
				String shape = n + " x " + dim + ", " + batch + " queries, k=" + k;
				SearchRun.Result expected = cpu.search(vectors, dim, queries, k);
				assertSameTopK("chosen path, " + shape, expected, cuda.search(vectors, dim, queries, k), k);
				if (k <= KnnGeometry.FUSED_MAX_K) {
					assertSameTopK("general path, " + shape, expected, cuda.general(vectors, dim, queries, k), k);
				}
			}
		}
	}

	@Test
	void aLargeScanSplitForTheDeviceMatchesTheTwin() {
		Random random = new Random(53);
		int dim = 128;
		int n = 300_007;
		float[] vectors = Reference.storedRows(random, n, dim, false);
		for (int count : new int[] { 1, 4, 16 }) {
			float[] queries = Reference.queries(random, count, dim);
			for (int k : new int[] { 10, 100 }) {
				assertSameTopK(count + " queries, k=" + k, cpu.search(vectors, dim, queries, k),
						cuda.search(vectors, dim, queries, k), k);
			}
		}
	}

}
