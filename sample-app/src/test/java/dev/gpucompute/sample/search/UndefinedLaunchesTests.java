package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.StreamLease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A launch of {@code knn_fused} or {@code knn_merge} that the kernel does not define is refused on the
 * host, before anything is allocated or enqueued, with an {@link InvalidLaunchConfigException} for
 * that request alone; the next search on the same context works. On CUDA the kernels cannot fail one
 * request by themselves (a trap or a fault is a sticky error that loses the context, and every later
 * search with it), so the host's check is what keeps such a launch from the device. Every launch the
 * search's own rule makes passes the check, on CUDA's rule as on the CPU backend's. Launches are
 * counted by the kernels' own statistics; the emulated kernels' side (a block of an undefined launch
 * returns without writing) is in {@link KnnKernelsEmulatedTests} and {@link KnnMergeEmulatedTests}.
 */
class UndefinedLaunchesTests {

	private static SearchRun run;

	@BeforeAll
	static void open() {
		run = new SearchRun(Backend.CPU, 64L << 20);
	}

	@AfterAll
	static void close() {
		if (run != null) {
			run.close();
		}
	}

	@Test
	void aFusedSearchOfAnUndefinedKIsRefusedBeforeItsLaunchAndTheNextSearchWorks() {
		Random random = new Random(113);
		int dim = 12;
		int n = 700;
		float[] vectors = Reference.storedRows(random, n, dim, false);
		float[] queries = Reference.queries(random, 3, dim);
		run.context.synchronizeDevice();
		long buffers = run.context.memory().liveBuffers();
		for (int k : new int[] { 0, KnnGeometry.FUSED_MAX_K + 1 }) {
			long fused = launches(KnnKernels.FUSED.name());
			long merge = launches(KnnKernels.MERGE.name());
			assertThatThrownBy(() -> run.fused(vectors, dim, queries, k)).as("k = %d", k)
				.isInstanceOf(InvalidLaunchConfigException.class)
				.hasMessageContaining("knn_fused does not define blocks of 3 queries at k = " + k)
				.hasMessageContaining("refused before the launch");
			assertThat(launches(KnnKernels.FUSED.name())).as("knn_fused launches, k = %d", k).isEqualTo(fused);
			assertThat(launches(KnnKernels.MERGE.name())).as("knn_merge launches, k = %d", k).isEqualTo(merge);
		}
		run.context.synchronizeDevice(); // the frees of the request's own buffers are ordered on its stream
		assertThat(run.context.memory().liveBuffers()).as("device buffers after the refusals").isEqualTo(buffers);
		long fused = launches(KnnKernels.FUSED.name());
		TopKAssertions.assertSameTopK("the next search", Reference.topK(vectors, dim, queries, 10, 0, n),
				run.fused(vectors, dim, queries, 10), 10);
		assertThat(launches(KnnKernels.FUSED.name())).isEqualTo(fused + 1);
	}

	@Test
	void aMergeOfAnUndefinedShapeIsRefusedBeforeItsLaunchAndTheNextMergeWorks() {
		MergeRun.Lists lists = MergeRun.lists(new Random(127), 2, 40, 10, true);
		run.context.synchronizeDevice();
		long buffers = run.context.memory().liveBuffers();
		try (StreamLease lease = run.context.streams().acquire();
				DeviceBuffer scores = run.context.launcher().upload(HostArray.of(lists.scores()));
				DeviceBuffer ids = run.context.launcher().upload(HostArray.of(lists.ids()))) {
			GpuStream stream = lease.stream();
			long uploaded = run.context.memory().liveBuffers();
			int[][] shapes = { { 40, 0 }, { 0, 10 }, { KnnGeometry.MERGE_MAX_RUNS + 1, 10 } };
			for (int[] shape : shapes) {
				long merge = launches(KnnKernels.MERGE.name());
				assertThatThrownBy(() -> run.search().merge(stream, scores, ids, shape[0], lists.queries(), shape[1]))
					.as("%d lists of k = %d", shape[0], shape[1])
					.isInstanceOf(InvalidLaunchConfigException.class)
					.hasMessageContaining("knn_merge");
				assertThat(launches(KnnKernels.MERGE.name())).as("knn_merge launches").isEqualTo(merge);
				assertThat(run.context.memory().liveBuffers()).as("device buffers").isEqualTo(uploaded);
			}
			SearchRun.Result merged = download(stream, run.search().merge(stream, scores, ids, lists.runs(),
					lists.queries(), lists.k()), lists.queries() * lists.k());
			TopKAssertions.assertSameTopK("the next merge", MergeRun.sortedTopK(lists), merged, lists.k());
		}
		run.context.synchronizeDevice();
		assertThat(run.context.memory().liveBuffers()).isEqualTo(buffers);
	}

	@Test
	void theChecksNameTheRuleTheyRefuseBy() {
		assertThatThrownBy(() -> KnnLaunchRules.checkFused(true, 20, 10, 16, 2))
			.isInstanceOf(InvalidLaunchConfigException.class)
			.hasMessage("knn_fused does not define blocks of 16 queries at k = 10 on CUDA: it takes 1 to 8 or 32 queries "
					+ "per block and k from 1 to 128; refused before the launch");
		assertThatThrownBy(() -> KnnLaunchRules.checkFused(false, 3, 10, 3, 2))
			.isInstanceOf(InvalidLaunchConfigException.class)
			.hasMessage("knn_fused does not define a grid of 2 blocks for 3 queries in groups of 3: it takes one block "
					+ "per group, ceil(queries / group); refused before the launch");
		assertThatThrownBy(() -> KnnLaunchRules.checkMerge(129, 10, 32))
			.isInstanceOf(InvalidLaunchConfigException.class)
			.hasMessage("knn_merge does not define a launch of 129 lists of k = 10 in blocks of 32 threads: it takes "
					+ "k >= 1 and blocks of a multiple of 32 threads, at most 256, with at most 4 lists per thread; "
					+ "refused before the launch");
	}

	@Test
	void everyLaunchTheRuleMakesIsDefinedAndTheOthersAreNot() {
		DeviceInfo h200 = new DeviceInfo(Backend.CUDA, 0, "H200", "GPU-0", "", "9.0", 132, 141L << 30, "13.0", 1024,
				Dim3.of(1024, 1024, 64), Dim3.of(Integer.MAX_VALUE, 65535, 65535), 232_448, 32);
		DeviceInfo cpu = run.context.device();
		for (int q = 1; q <= 300; q++) {
			int queries = q;
			for (DeviceInfo device : new DeviceInfo[] { h200, cpu }) {
				boolean cuda = device.backend() == Backend.CUDA;
				int group = DeviceSearch.groupQueries(device, queries);
				int blocks = DeviceSearch.ceilDiv(queries, group);
				for (int k : new int[] { 1, 10, KnnGeometry.FUSED_MAX_K }) {
					assertThatCode(() -> KnnLaunchRules.checkFused(cuda, queries, k, group, blocks))
						.as("%d queries on %s, k = %d", queries, device.backend(), k)
						.doesNotThrowAnyException();
				}
				assertThat(KnnLaunchRules.fusedDefines(cuda, group, KnnGeometry.FUSED_MAX_K + 1)).isFalse();
				assertThat(KnnLaunchRules.fusedDefines(cuda, group, 0)).isFalse();
			}
		}
		// CUDA's groups: 1 to 8 (the scan) and 32 (the batch path), no other; the twin takes any from 1.
		for (int group = 0; group <= 40; group++) {
			assertThat(KnnLaunchRules.fusedDefines(true, group, 10)).as("CUDA, groups of %d", group)
				.isEqualTo((group >= 1 && group <= KnnGeometry.SCAN_MAX) || group == KnnGeometry.BATCH_Q);
			assertThat(KnnLaunchRules.fusedDefines(false, group, 10)).as("CPU, groups of %d", group).isEqualTo(group >= 1);
		}
		for (int runs = 1; runs <= KnnGeometry.MERGE_MAX_RUNS; runs++) {
			int threads = KnnGeometry.mergeThreads(runs);
			assertThat(KnnLaunchRules.mergeDefines(runs, 1, threads)).as("%d lists", runs).isTrue();
			assertThat(KnnLaunchRules.mergeDefines(runs, 0, threads)).isFalse();
			// A warp fewer does not own every list; a block that is no multiple of a warp is not defined.
			assertThat(KnnLaunchRules.mergeDefines(runs, 10, threads - 32)).isFalse();
			assertThat(KnnLaunchRules.mergeDefines(runs, 10, threads + 16)).isFalse();
		}
		assertThat(KnnLaunchRules.mergeDefines(10, 10, KnnGeometry.MERGE_MAX_BLOCK + 32)).isFalse();
		assertThatThrownBy(() -> KnnGeometry.mergeThreads(KnnGeometry.MERGE_MAX_RUNS + 1))
			.isInstanceOf(InvalidLaunchConfigException.class);
	}

	private static long launches(String kernel) {
		return run.context.launcher()
			.kernels()
			.stream()
			.filter((loaded) -> loaded.name().equals(kernel))
			.mapToLong((loaded) -> loaded.stats().launches())
			.sum();
	}

	/** Downloads and frees a merge's output. */
	private static SearchRun.Result download(GpuStream stream, DeviceBuffer[] out, int entries) {
		SearchRun.Result result = new SearchRun.Result(new float[entries], new int[entries]);
		try {
			List<CompletableFuture<Void>> downloads = new ArrayList<>();
			downloads.add(out[0].download(HostArray.of(result.scores()), stream));
			downloads.add(out[1].download(HostArray.of(result.slots()), stream));
			downloads.forEach(CompletableFuture::join);
		}
		finally {
			out[0].close();
			out[1].close();
		}
		return result;
	}

}
