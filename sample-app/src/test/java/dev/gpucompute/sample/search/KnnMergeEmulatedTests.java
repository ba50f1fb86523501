package dev.gpucompute.sample.search;

import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code knn_merge} from its CUDA source, on the host's {@link KernelEmulator}, against its CPU twin:
 * every entry (id and score bits) must be equal, for one and many queries, k = 1, 10 and 32 (and 33
 * and 64, past the engine's bound: the kernel is defined for any k), 1, 2, 33, 264 and 1,024 lists (the
 * most the engine gives it), lists that end in padding or are all padding, equal scores across lists,
 * -inf and both zeros, in blocks of the engine's size and larger ones (threads that own no list), in
 * several thread orders; and no launch may break a rule of the execution model or read past its
 * lists. A launch the kernel does not define returns without writing, on both sides (no trap). The
 * twin itself is checked against {@code knn_topk}'s passes and a written-out sort in
 * {@link KnnMergeTests}; {@code KnnMergeCudaGpuTests} runs the same shapes on a device.
 */
@ExtendWith(KernelEmulator.Available.class)
class KnnMergeEmulatedTests {

	private static KernelEmulator emulator;

	private static MergeRun cpu;

	@BeforeAll
	static void open() {
		emulator = KernelEmulator.get();
		cpu = new MergeRun(Backend.CPU);
	}

	@AfterAll
	static void close() {
		if (cpu != null) {
			cpu.close();
		}
	}

	private static void assertMerge(MergeRun.Lists lists, int threads, long seed) {
		SearchRun.Result twin = cpu.merge(lists, threads);
		SearchRun.Result kernel = emulator.merge(lists, threads, seed);
		TopKAssertions.assertSameTopK(lists.shape() + ", " + threads + " threads, seed " + seed, twin, kernel, lists.k());
	}

	@Test
	void theEngineShapesMatchTheTwin() {
		Random random = new Random(83);
		int[] runs = { 1, 2, 33, 264, 1024 };
		int[] ks = { 1, 10, 32 };
		long seed = 0;
		for (int r : runs) {
			for (int k : ks) {
				// Many queries where a launch is cheap to emulate; one where a block has 256 threads.
				int queries = (r >= 264) ? ((k == 10) ? 3 : 1) : 5;
				for (boolean ties : new boolean[] { false, true }) {
					MergeRun.Lists lists = MergeRun.lists(random, queries, r, k, ties);
					assertMerge(lists, KnnGeometry.mergeThreads(r), ++seed);
				}
			}
		}
	}

	@Test
	void kPastTheEnginesBoundAndLargerBlocksMatchTheTwin() {
		Random random = new Random(89);
		assertMerge(MergeRun.lists(random, 2, 40, 33, true), KnnGeometry.mergeThreads(40), 1);
		assertMerge(MergeRun.lists(random, 2, 7, 64, false), KnnGeometry.mergeThreads(7), 2);
		// Threads and warps that own no list at all: 2 lists in a block of 256.
		assertMerge(MergeRun.lists(random, 3, 2, 10, true), 256, 3);
		assertMerge(MergeRun.lists(random, 3, 264, 10, false), 128, 4);
	}

	@Test
	void noOrderOfThreadsChangesTheBits() {
		Random random = new Random(97);
		MergeRun.Lists lists = MergeRun.lists(random, 2, 264, 32, true);
		for (long seed = 11; seed <= 14; seed++) {
			assertMerge(lists, KnnGeometry.mergeThreads(264), seed);
		}
	}

	@Test
	void listsOfPaddingOnlyGivePaddingAfterTheRealEntries() {
		// Every list empty but one entry in list 5: rank 0 that entry, the rest padding (the early exit).
		int runs = 9;
		int k = 10;
		float[] scores = new float[runs * k];
		int[] ids = new int[runs * k];
		java.util.Arrays.fill(scores, Float.NEGATIVE_INFINITY);
		java.util.Arrays.fill(ids, KnnKernels.NO_ID);
		scores[5 * k] = Float.NEGATIVE_INFINITY;
		ids[5 * k] = 321; // a real row whose score was NaN: it still ranks before the padding
		MergeRun.Lists lists = new MergeRun.Lists(1, runs, k, scores, ids);
		SearchRun.Result kernel = emulator.merge(lists, 32, 1);
		assertThat(kernel.slots()[0]).isEqualTo(321);
		for (int r = 1; r < k; r++) {
			assertThat(kernel.slots()[r]).as("rank %d", r).isEqualTo(KnnKernels.NO_ID);
			assertThat(kernel.scores()[r]).as("rank %d", r).isEqualTo(Float.NEGATIVE_INFINITY);
		}
		TopKAssertions.assertSameTopK("one real entry", cpu.merge(lists, 32), kernel, k);
	}

	@Test
	void launchesTheKernelDoesNotDefineWriteNothingOnEitherSide() {
		// The host refuses these before a launch (UndefinedLaunchesTests); one that came all the same must
		// not trap (a sticky error on a device: the context and every later search lost), but return.
		Random random = new Random(101);
		MergeRun.Lists tooMany = MergeRun.lists(random, 2, 129, 10, false);
		MergeRun.Lists few = MergeRun.lists(random, 2, 10, 10, true);
		MergeRun.Lists none = new MergeRun.Lists(2, 0, 10, new float[0], new int[0]);
		// 129 lists need 33 threads at 4 each: a block of 32 is too small; 48 is no multiple of a warp;
		// 288 threads are more than the kernel's shared memory has warps for; no lists at all.
		Object[][] cases = { { tooMany, 32 }, { tooMany, 48 }, { few, 288 }, { none, 32 } };
		for (Object[] c : cases) {
			MergeRun.Lists lists = (MergeRun.Lists) c[0];
			int threads = (int) c[1];
			String shape = lists.shape() + ", " + threads + " threads";
			assertThat(KnnLaunchRules.mergeDefines(lists.runs(), lists.k(), threads)).as(shape).isFalse();
			assertThat(emulator.merge(lists, threads, 1).noneWritten()).as("the kernel, " + shape).isTrue();
			assertThat(cpu.merge(lists, threads).noneWritten()).as("the twin, " + shape).isTrue();
		}
	}

}
