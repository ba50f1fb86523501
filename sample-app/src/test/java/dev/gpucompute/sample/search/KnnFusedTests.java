package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;

import static dev.gpucompute.sample.search.TopKAssertions.assertSameTopK;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code knn_fused} and the fused path on the CPU backend: every range's list is the top k of that
 * range by the written-out definition ({@link Reference}), for dimensions that are and are not
 * multiples of 16, row counts that are no multiple of a tile, the scan path's 1-8 queries and the batch
 * path's groups of 32, k from 1 to {@value KnnGeometry#FUSED_MAX_K}, ties and overflowing scores; a
 * whole search gives the same bits on the fused and the general path, and a query the same bits alone
 * (scan) and in a batch. {@code KnnFusedCudaGpuTests} compares the CUDA kernel with this twin.
 */
class KnnFusedTests {

	private static SearchRun run;

	@BeforeAll
	static void open() {
		run = new SearchRun(Backend.CPU, 64L << 20);
	}

	@AfterAll
	static void close() {
		run.close();
	}

	@ParameterizedTest(name = "dimension {0}")
	@ValueSource(ints = { 1, 7, 16, 17, 33, 128, 385 })
	void everyRangesListIsItsTopKByTheDefinition(int dim) {
		Random random = new Random(dim);
		int n = 700 + dim;
		float[] vectors = Reference.storedRows(random, n, dim, true);
		// Queries, k, rows per block, queries per block (CUDA's groups: all up to 8, else 32; the CPU's: any).
		int[][] cases = { { 1, 1, 64, 1 }, { 3, 10, 192, 3 }, { 8, 128, 320, 8 }, { 9, 100, 64, 32 },
				{ 40, 10, 192, 32 }, { 40, 7, 128, 40 }, { 70, 20, 256, 25 }, { 10, 5, 64, 3 } };
		for (int[] c : cases) {
			int count = c[0];
			int k = c[1];
			int rowsPerBlock = c[2];
			int group = c[3];
			float[] queries = Reference.queries(random, count, dim);
			SearchRun.Result lists = run.fusedLists(vectors, dim, queries, k, rowsPerBlock, group);
			assertSameTopK(String.format("%d queries in groups of %d, k=%d, %d rows per block", count, group, k,
					rowsPerBlock), Reference.rangeLists(vectors, dim, queries, k, rowsPerBlock), lists, k,
					DeviceSearch.ceilDiv(n, rowsPerBlock));
		}
	}

	@Test
	void theTestDataHoldsScoresThatOverflowToNanAndInfinity() {
		Random random = new Random(1);
		int dim = 33;
		float[] vectors = Reference.storedRows(random, 300, dim, true);
		float[] queries = Reference.queries(random, 1, dim);
		assertThat(Reference.rawScore(queries, 0, vectors, 3, dim)).isNaN();
		assertThat(Reference.rawScore(queries, 0, vectors, 100, dim)).isEqualTo(Float.POSITIVE_INFINITY);
		assertThat(Reference.rawScore(queries, 0, vectors, 197, dim)).isEqualTo(Float.NEGATIVE_INFINITY);
	}

	@Test
	void theFusedAndTheGeneralPathGiveTheSameBitsAsTheDefinition() {
		Random random = new Random(41);
		int[][] cases = { { 1, 5000, 1, 1 }, { 33, 4099, 3, 10 }, { 128, 3001, 8, 100 }, { 100, 2500, 9, 128 },
				{ 17, 6000, 100, 10 }, { 384, 1000, 33, 64 } };
		for (int[] c : cases) {
			int dim = c[0];
			int n = c[1];
			int count = c[2];
			int k = c[3];
			float[] vectors = Reference.storedRows(random, n, dim, true);
			float[] queries = Reference.queries(random, count, dim);
			String shape = n + " x " + dim + ", " + count + " queries, k=" + k;
			SearchRun.Result expected = Reference.topK(vectors, dim, queries, k, 0, n);
			assertSameTopK("fused, " + shape, expected, run.fused(vectors, dim, queries, k), k);
			assertSameTopK("general, " + shape, expected, run.general(vectors, dim, queries, k), k);
			assertSameTopK("chosen, " + shape, expected, run.search(vectors, dim, queries, k), k);
		}
	}

	@Test
	void aQueryGetsTheSameBitsAloneOnTheScanAndInABatch() {
		Random random = new Random(43);
		int dim = 33;
		int n = 20_000;
		float[] vectors = Reference.storedRows(random, n, dim, true);
		float[] queries = Reference.queries(random, 100, dim);
		for (int k : new int[] { 10, KnnGeometry.FUSED_MAX_K }) {
			SearchRun.Result batch = run.search(vectors, dim, queries, k);
			for (int q = 0; q < 100; q += 9) {
				float[] one = java.util.Arrays.copyOfRange(queries, q * dim, (q + 1) * dim);
				assertSameTopK("query " + q + " alone (expected) and in the batch, k=" + k,
						run.search(vectors, dim, one, k), batch.slice(q * k, (q + 1) * k), k);
			}
		}
	}

	@Test
	void manyEqualScoresGoToTheLowestRows() {
		int dim = 20;
		int n = 3000;
		float[] vectors = new float[n * dim];
		for (int v = 0; v < n; v++) {
			// Four distinct rows, repeated: each query's top k is all ties of the best row.
			vectors[v * dim + (v % 4)] = 1f;
		}
		float[] queries = { 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
		SearchRun.Result result = run.fused(vectors, dim, queries, 100);
		for (int r = 0; r < 100; r++) {
			assertThat(result.slots()[r]).isEqualTo(2 + 4 * r);
			assertThat(result.scores()[r]).isEqualTo(1f);
		}
	}

	@Test
	void aSmallScratchSplitsTheQueriesIntoSubBatchesWithTheSameAnswers() {
		Random random = new Random(47);
		int dim = 16;
		int n = 5000;
		int k = 10;
		float[] vectors = Reference.storedRows(random, n, dim, false);
		float[] queries = Reference.queries(random, 70, dim);
		// Scratch for 9 queries: 70 are halved to 35, 18, then 9 a launch, eight sub-batches, the last of 7.
		long scratch = DeviceSearch.fusedScratch(9, DeviceSearch.split(run.context.device(), n, 9), k);
		try (SearchRun small = new SearchRun(Backend.CPU, scratch)) {
			List<List<Integer>> pieces = new ArrayList<>();
			assertSameTopK("sub-batches", Reference.topK(vectors, dim, queries, k, 0, n),
					small.fused(vectors, dim, queries, k, pieces), k);
			assertThat(pieces).as("(first query, queries) of each sub-batch").containsExactly(List.of(0, 9),
					List.of(9, 9), List.of(18, 9), List.of(27, 9), List.of(36, 9), List.of(45, 9), List.of(54, 9),
					List.of(63, 7));
		}
	}

	@Test
	void launchesPastTheDataWritePaddingAsTheKernelsDo() {
		// No launch of the engine's has a range without rows or a chunk without candidates, but the twins
		// define what the CUDA kernels do there: all (-inf, NO_ID), the padding that sorts last.
		Random random = new Random(57);
		int dim = 5;
		int n = 300;
		int k = 10;
		float[] vectors = Reference.storedRows(random, n, dim, false);
		float[] queries = Reference.queries(random, 3, dim);
		SearchRun.Result lists = run.fusedLists(vectors, dim, queries, k, 128, 3, 4);
		SearchRun.Result expected = Reference.rangeLists(vectors, dim, queries, k, 128);
		for (int q = 0; q < 3; q++) {
			assertSameTopK("query " + q + ", the range past the rows", SearchRun.Result.padding(k),
					lists.slice((q * 4 + 3) * k, (q * 4 + 4) * k), k);
			assertSameTopK("query " + q + ", the ranges with rows", expected.slice(q * 3 * k, (q + 1) * 3 * k),
					lists.slice(q * 4 * k, (q * 4 + 3) * k), k, 3);
		}
		float[] scores = Reference.rows(random, 2 * 100, 1);
		SearchRun.Result chunks = run.topk(scores, null, 2, k, 0, 2);
		for (int q = 0; q < 2; q++) {
			assertSameTopK("row " + q + ", the chunk past the candidates", SearchRun.Result.padding(k),
					chunks.slice((2 * q + 1) * k, (2 * q + 2) * k), k);
		}
	}

	@Test
	void moreQueriesThanAGridColumnHoldsAreSearchedInSubBatches() {
		// knn_topk merges the ranges' lists with a block row per query, and a grid has at most 65,535
		// rows (y) on CUDA and on the CPU backend: a larger group of queries must not become one launch.
		Random random = new Random(53);
		int dim = 3;
		int n = 40;
		int k = 2;
		int count = DeviceSearch.MAX_QUERIES_PER_LAUNCH + 70;
		float[] vectors = Reference.storedRows(random, n, dim, false);
		// 7 distinct queries over and over: the expected answers are theirs, repeated.
		int distinct = 7;
		float[] some = Reference.queries(random, distinct, dim);
		SearchRun.Result answers = Reference.topK(vectors, dim, some, k, 0, n);
		float[] queries = new float[count * dim];
		SearchRun.Result expected = new SearchRun.Result(new float[count * k], new int[count * k]);
		for (int q = 0; q < count; q++) {
			System.arraycopy(some, (q % distinct) * dim, queries, q * dim, dim);
			System.arraycopy(answers.scores(), (q % distinct) * k, expected.scores(), q * k, k);
			System.arraycopy(answers.slots(), (q % distinct) * k, expected.slots(), q * k, k);
		}
		assertSameTopK("fused", expected, run.fused(vectors, dim, queries, k), k);
		assertSameTopK("general", expected, run.general(vectors, dim, queries, k), k);
	}

	@Test
	void aSplitNeverHasMoreRangesThanAGridHasRows() {
		// 16 blocks per worker on a CPU backend of 4,096 workers, one query group: 65,536 blocks wanted.
		for (int n : new int[] { 1, 63, 65, 4_194_304, 5_000_000, Integer.MAX_VALUE - 64 }) {
			for (int target : new int[] { 1, 264, 16 * 4096 }) {
				DeviceSearch.Split split = DeviceSearch.Split.of(n, 1, target);
				assertThat(split.ranges()).as("n=%d, %d blocks", n, target).isBetween(1, DeviceSearch.MAX_GRID_ROWS);
				assertThat(split.rowsPerBlock() % KnnGeometry.SCAN_TILE).isZero();
				assertThat((long) split.ranges() * split.rowsPerBlock()).as("n=%d, %d blocks", n, target)
					.isGreaterThanOrEqualTo(n)
					.isLessThan((long) n + split.rowsPerBlock());
			}
		}
	}

	@Test
	void theRuleTakesTheFusedPathUpToItsLargestKAndWhereItsSharedMemoryFits() {
		DeviceInfo cpu = run.context.device();
		assertThat(DeviceSearch.fused(cpu, 4096, 100, KnnGeometry.FUSED_MAX_K)).isTrue();
		assertThat(DeviceSearch.fused(cpu, 4096, 100, KnnGeometry.FUSED_MAX_K + 1)).isFalse();
		// Queries per block: all of them up to 8; then 32 on CUDA, up to 128 on the CPU backend.
		assertThat(DeviceSearch.groupQueries(cpu, 5)).isEqualTo(5);
		assertThat(DeviceSearch.groupQueries(cpu, 100)).isEqualTo(100);
		assertThat(DeviceSearch.groupQueries(cpu, 1000)).isEqualTo(DeviceSearch.CPU_GROUP_QUERIES);
		// An H100's opt-in limit: 227 KB per block.
		DeviceInfo h100 = new DeviceInfo(Backend.CUDA, 0, "H100", "GPU-0", "", "9.0", 132, 80L << 30, "13.0", 1024,
				Dim3.of(1024, 1024, 64), Dim3.of(Integer.MAX_VALUE, 65535, 65535), 232_448, 32);
		assertThat(DeviceSearch.fused(h100, 128, 100, 10)).isTrue();
		assertThat(DeviceSearch.fused(h100, 384, 100, 128)).isTrue();
		// The limits docs/sample-app.md states: 1,152 dimensions at k = 128, 1,408 at k = 10, any for <= 8 queries.
		assertThat(DeviceSearch.fused(h100, 1152, 100, 128)).isTrue();
		assertThat(DeviceSearch.fused(h100, 1153, 100, 128)).isFalse();
		assertThat(DeviceSearch.fused(h100, 1408, 100, 10)).isTrue();
		assertThat(DeviceSearch.fused(h100, 1409, 100, 10)).isFalse();
		assertThat(DeviceSearch.fused(h100, 4096, 8, 128)).isTrue();
		assertThat(DeviceSearch.fused(h100, 128, 1, KnnGeometry.FUSED_MAX_K + 1)).isFalse();
		assertThat(DeviceSearch.groupQueries(h100, 8)).isEqualTo(8);
		assertThat(DeviceSearch.groupQueries(h100, 9)).isEqualTo(KnnGeometry.BATCH_Q);
		// The layout of knn_fused.cu: queries, (batch: a staged tile), and per query slots + count + threshold.
		assertThat(KnnGeometry.fusedSharedBytes(128, 1, 10)).isEqualTo(4L * 128 + 8L * 256 + 12);
		assertThat(KnnGeometry.fusedSharedBytes(128, 5, 10)).isEqualTo(8 * (4L * 128 + 8L * 256 + 12));
		assertThat(KnnGeometry.fusedSharedBytes(128, 32, 10))
			.isEqualTo(4L * 32 * 132 + 4L * 32 * 132 + 32 * (8L * 128 + 12));
		assertThat(KnnGeometry.fusedSharedBytes(384, 32, 128))
			.isEqualTo(4L * 32 * 388 + 4L * 32 * 132 + 32 * (8L * 256 + 12));
	}

}
