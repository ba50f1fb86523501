package dev.gpucompute.sample.search;

import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;

import static dev.gpucompute.sample.search.TopKAssertions.assertSameTopK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code knn_fused} and {@code knn_topk} from their CUDA source, on the host's {@link KernelEmulator},
 * against their CPU twins: every entry (row and score bits) must be equal, and no launch may break a
 * rule of the execution model (a barrier or warp mask not met by the threads that run it) or touch
 * memory outside its buffers and its shared memory, which is allocated at exactly the size the host
 * computes ({@link KnnGeometry#fusedSharedBytes}). Threads run in a seeded order between
 * synchronisation points, and a result must not depend on it. A block of a launch the kernel does not
 * define returns without writing (no trap). The shapes are those of {@code KnnFusedCudaGpuTests}, which
 * checks the same on a device; this runs in CI without one.
 */
@ExtendWith(KernelEmulator.Available.class)
class KnnKernelsEmulatedTests {

	private static SearchRun cpu;

	private static KernelEmulator emulator;

	@BeforeAll
	static void open() {
		emulator = KernelEmulator.get();
		cpu = new SearchRun(Backend.CPU, 64L << 20);
	}

	@AfterAll
	static void close() {
		if (cpu != null) {
			cpu.close();
		}
	}

	/** One emulated launch with the shared memory the host gives it, against the twin's lists. */
	private static void assertLaunch(String shape, float[] vectors, int dim, float[] queries, int k, int rowsPerBlock,
			int group, int ranges, long seed, boolean yieldAtAtomics) {
		int shared = (int) KnnGeometry.fusedSharedBytes(dim, group, k);
		SearchRun.Result kernel = emulator.fused(vectors, dim, queries, k, rowsPerBlock, group, ranges, shared, seed,
				yieldAtAtomics);
		assertSameTopK(shape, cpu.fusedLists(vectors, dim, queries, k, rowsPerBlock, group, ranges), kernel, k, ranges);
	}

	private static void assertLaunch(float[] vectors, int dim, float[] queries, int k, int rowsPerBlock, int group,
			long seed) {
		int n = vectors.length / dim;
		int count = queries.length / dim;
		String shape = n + " x " + dim + ", " + count + " queries in groups of " + group + ", k=" + k + ", "
				+ rowsPerBlock + " rows per block, seed " + seed;
		assertLaunch(shape, vectors, dim, queries, k, rowsPerBlock, group, DeviceSearch.ceilDiv(n, rowsPerBlock), seed,
				seed % 2 == 1);
	}

	/** CUDA's groups (all queries up to 8, else 32), as the engine launches them. */
	private static int cudaGroup(int count) {
		return (count <= KnnGeometry.SCAN_MAX) ? count : KnnGeometry.BATCH_Q;
	}

	@Test
	void scanListsMatchTheTwin() {
		assertShapes(37, new int[] { 1, 3, 4, 7, 15, 16, 17, 33, 64, 100, 128, 130, 385 }, new int[] { 1, 2, 3, 5, 8 },
				new int[] { 1, 63, 65, 1000, 777, 2049 });
	}

	@Test
	void batchListsMatchTheTwin() {
		// Groups of 32 and a partial last group; dimensions within one staged chunk of 128 and over
		// several, multiples of 4 (float4 loads) and not; row counts no multiple of 32.
		assertShapes(41, new int[] { 1, 7, 16, 33, 128, 130, 385 }, new int[] { 9, 32, 33, 64, 70 },
				new int[] { 1, 31, 65, 700, 777, 1029 });
	}

	/**
	 * Two launches per dimension, the query counts, row counts, k (1 to 128) and rows per block taken
	 * in turn, on stored rows with ties and overflowing scores.
	 */
	private static void assertShapes(long seed, int[] dims, int[] counts, int[] sizes) {
		int[] ks = { 1, 10, 100, 128, 7, 64 };
		int[] rowsPerBlock = { 64, 320, 128, 1024 };
		int round = 0;
		for (int dim : dims) {
			for (int variant = 0; variant < 2; variant++, round++) {
				Random random = new Random(seed * dim + variant);
				int n = sizes[round % sizes.length];
				int count = counts[round % counts.length];
				float[] vectors = Reference.storedRows(random, n, dim, true);
				float[] queries = Reference.queries(random, count, dim);
				assertLaunch(vectors, dim, queries, ks[round % ks.length], rowsPerBlock[round % rowsPerBlock.length],
						cudaGroup(count), round);
			}
		}
	}

	@Test
	void severalScanGroupsInOneLaunchMatchTheTwin() {
		Random random = new Random(59);
		int[][] cases = { { 10, 3, 17 }, { 10, 8, 128 }, { 5, 2, 33 }, { 9, 1, 7 }, { 13, 5, 4 } };
		for (int[] c : cases) {
			int dim = c[2];
			float[] vectors = Reference.storedRows(random, 700, dim, true);
			float[] queries = Reference.queries(random, c[0], dim);
			assertLaunch(vectors, dim, queries, 10, 256, c[1], c[0]);
		}
	}

	@Test
	void noOrderOfThreadsChangesTheBits() {
		// Few distinct rows: every list is full of ties, and with k = 128 the lists are sorted in most
		// iterations, so the order of the offers, the counts and the sorts is exercised on both paths.
		Random random = new Random(61);
		int dim = 12;
		int n = 1100;
		float[] distinct = Reference.rows(random, 5, dim);
		float[] vectors = new float[n * dim];
		for (int v = 0; v < n; v++) {
			System.arraycopy(distinct, random.nextInt(5) * dim, vectors, v * dim, dim);
		}
		for (int count : new int[] { 3, 33 }) {
			float[] queries = Reference.queries(random, count, dim);
			for (int k : new int[] { 128, 10 }) {
				for (long seed = 1; seed <= 3; seed++) {
					assertLaunch(vectors, dim, queries, k, 576, cudaGroup(count), seed);
				}
			}
		}
	}

	@Test
	void knnTopkMatchesTheTwin() {
		Random random = new Random(67);
		int[][] cases = { { 1, 1 }, { 5, 10 }, { 2047, 10 }, { 2049, 100 }, { 3000, 1024 }, { 4113, 7 }, { 700, 700 } };
		for (int[] c : cases) {
			int m = c[0];
			int k = c[1];
			int rows = 3;
			float[] scores = new float[rows * m];
			int[] ids = new int[rows * m];
			for (int i = 0; i < scores.length; i++) {
				// Ties on every fifth candidate, -inf now and then, ids in no particular order.
				scores[i] = (i % 5 == 0) ? 0.5f : (i % 97 == 0) ? Float.NEGATIVE_INFINITY : (float) random.nextGaussian();
				ids[i] = random.nextInt(1_000_000);
			}
			int chunks = DeviceSearch.ceilDiv(m, KnnGeometry.CHUNK);
			for (int[] candidates : new int[][] { null, ids }) {
				String shape = rows + " x " + m + ", k=" + k + ((candidates != null) ? ", ids given" : ", positions");
				assertSameTopK(shape, cpu.topk(scores, candidates, rows, k, 1000, chunks),
						emulator.topk(scores, candidates, rows, k, 1000, chunks, m), Math.min(k, KnnGeometry.CHUNK), chunks);
			}
		}
	}

	@Test
	void launchesPastTheDataMatchTheTwin() {
		// A range without rows and a chunk without candidates: no launch of the engine's has one, but
		// kernel and twin must still agree (all padding).
		Random random = new Random(73);
		int dim = 9;
		float[] vectors = Reference.storedRows(random, 300, dim, true);
		for (int count : new int[] { 3, 33 }) {
			float[] queries = Reference.queries(random, count, dim);
			assertLaunch(count + " queries, a fourth range past 300 rows", vectors, dim, queries, 10, 128, cudaGroup(count),
					4, 5, false);
		}
		float[] scores = Reference.rows(random, 2 * 100, 1);
		assertSameTopK("knn_topk, a chunk past 100 candidates", cpu.topk(scores, null, 2, 10, 0, 2),
				emulator.topk(scores, null, 2, 10, 0, 2, 5), 10, 2);
	}

	@Test
	void blocksTheKernelDoesNotDefineReturnWithoutWriting() {
		// The host refuses such launches before they are enqueued (UndefinedLaunchesTests); a block of one
		// that came all the same must return, not trap (a sticky error on a device: the context and every
		// later search lost). The emulator reports a trap as a fault, and a write past the output as one.
		Random random = new Random(79);
		int dim = 20;
		float[] vectors = Reference.storedRows(random, 300, dim, true);
		float[] twenty = Reference.queries(random, 20, dim);
		float[] three = Reference.queries(random, 3, dim);
		// Groups of 16: the CUDA kernel has no such path (its twin has: it takes any group).
		assertThat(KnnLaunchRules.fusedDefines(true, 16, 10)).isFalse();
		assertThat(emulator.fused(vectors, dim, twenty, 10, 128, 16, 3, (int) KnnGeometry.fusedSharedBytes(dim, 16, 10),
				1, false).noneWritten()).as("groups of 16").isTrue();
		// k past the largest the kernel keeps: neither kernel nor twin writes.
		int k = KnnGeometry.FUSED_MAX_K + 1;
		assertThat(emulator.fused(vectors, dim, three, k, 128, 3, 3, (int) KnnGeometry.fusedSharedBytes(dim, 3, k), 2,
				false).noneWritten()).as("k = %d, the kernel", k).isTrue();
		assertThat(cpu.fusedLists(vectors, dim, three, k, 128, 3, 3).noneWritten()).as("k = %d, the twin", k).isTrue();
		// A grid with a block past the last query, on the scan path and the batch path: that block writes
		// nothing (its entries would be past the output), the others their lists.
		for (float[] queries : new float[][] { three, twenty }) {
			int count = queries.length / dim;
			int group = cudaGroup(count);
			int shared = (int) KnnGeometry.fusedSharedBytes(dim, group, 10);
			assertSameTopK(count + " queries, a block past them", cpu.fusedLists(vectors, dim, queries, 10, 128, group, 3),
					emulator.fused(vectors, dim, queries, 10, 128, group, DeviceSearch.ceilDiv(count, group) + 1, 3, shared,
							3, false),
					10, 3);
		}
	}

	@Test
	void theEmulatorReportsSharedMemoryTooSmallForTheKernel() {
		// The checks of the tests above are only worth something if a violation is reported: the launch
		// that the host sizes 4 bytes too small must fail, not pass quietly.
		Random random = new Random(71);
		int dim = 17;
		float[] vectors = Reference.storedRows(random, 300, dim, false);
		float[] queries = Reference.queries(random, 3, dim);
		int shared = (int) KnnGeometry.fusedSharedBytes(dim, 3, 10);
		assertThatThrownBy(() -> emulator.fused(vectors, dim, queries, 10, 128, 3, 3, shared - 4, 1, false))
			.isInstanceOf(KernelEmulator.KernelFault.class)
			.hasMessageContaining("heap-buffer-overflow");
	}

}
