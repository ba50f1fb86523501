package dev.gpucompute.sample.search;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Random;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.HostArray;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code knn_merge} on the CPU backend: its twin selects exactly the entries of {@code knn_topk}'s passes
 * (the fused path's merge before it) and of a written-out sort; whole searches through
 * {@link KnnEngine} (which builds its {@link DeviceSearch} with the five-kernel form) launch
 * {@code knn_fused} and {@code knn_merge} once each and {@code knn_topk} never for a small batch, with
 * the entries of the general path, of the fused path's old merge and of a brute-force ranking,
 * also over the 264 ranges one query group has on an H100 or H200 (a CPU device of 17 workers splits
 * into that many); and {@code knn_topk} still merges for k above {@value KnnGeometry#MERGE_MAX_K} and
 * for more than {@value KnnGeometry#MERGE_MAX_RUNS} ranges. Launches are counted by the kernels' own
 * statistics.
 */
class KnnMergeTests {

	private static MergeRun merges;

	private static SearchRun run;

	@BeforeAll
	static void open() {
		merges = new MergeRun(Backend.CPU);
		run = new SearchRun(Backend.CPU, 64L << 20);
	}

	@AfterAll
	static void close() {
		if (merges != null) {
			merges.close();
		}
		if (run != null) {
			run.close();
		}
	}

	@Test
	void theTwinSelectsWhatKnnTopkPassesAndASortSelect() {
		Random random = new Random(79);
		for (int runs : new int[] { 1, 2, 33, 264, 1024 }) {
			for (int k : new int[] { 1, 10, 32 }) {
				for (boolean ties : new boolean[] { false, true }) {
					MergeRun.Lists lists = MergeRun.lists(random, (runs >= 264) ? 2 : 5, runs, k, ties);
					String shape = lists.shape() + (ties ? ", ties" : "");
					SearchRun.Result twin = merges.merge(lists);
					TopKAssertions.assertSameTopK(shape + ": knn_topk's passes", merges.topkPasses(lists), twin, k);
					TopKAssertions.assertSameTopK(shape + ": a sort", MergeRun.sortedTopK(lists), twin, k);
				}
			}
		}
	}

	@Test
	void theCudaConstantsMatchTheJavaTwin() throws IOException {
		try (InputStream in = getClass().getClassLoader().getResourceAsStream(KnnKernels.LOCATION + "knn_merge.cu")) {
			assertThat(in).isNotNull();
			assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).contains("#define KNN_NO_ID 0x7fffffff",
					"#define KNN_MERGE_RUNS " + KnnGeometry.MERGE_RUNS_PER_THREAD,
					"#define KNN_MERGE_MAX_THREADS " + KnnGeometry.MERGE_MAX_BLOCK);
		}
		assertThat(KnnGeometry.mergeThreads(1)).isEqualTo(32);
		assertThat(KnnGeometry.mergeThreads(128)).isEqualTo(32);
		assertThat(KnnGeometry.mergeThreads(129)).isEqualTo(64);
		assertThat(KnnGeometry.mergeThreads(264)).isEqualTo(96);
		assertThat(KnnGeometry.mergeThreads(KnnGeometry.MERGE_MAX_RUNS)).isEqualTo(KnnGeometry.MERGE_MAX_BLOCK);
	}

	@Test
	void aSmallSearchOverTheRangesOfAnH200LaunchesOneMergeAndNoKnnTopk() {
		// 17 workers x 16 blocks = 272 target blocks: 16,896 rows split into 264 ranges of 64, as one
		// query group on 132 SMs x 2.
		try (Engine engine = new Engine(17)) {
			int dim = 24;
			int n = 264 * KnnGeometry.SCAN_TILE;
			Random random = new Random(103);
			float[] vectors = Reference.storedRows(random, n, dim, true);
			assertThat(DeviceSearch.split(engine.context.device(), n, 1).ranges()).isEqualTo(264);
			for (int count : new int[] { 1, 3, 16 }) {
				float[] queries = Reference.queries(random, count, dim);
				for (int k : new int[] { 1, 10, 32 }) {
					String shape = count + " queries, k=" + k;
					Launches before = engine.launches();
					SearchRun.Result result = engine.search(vectors, dim, queries, k);
					assertThat(engine.launches().minus(before)).as(shape).isEqualTo(new Launches(1, 1, 0));
					DeviceSearch.Split split = DeviceSearch.split(engine.context.device(), n, count);
					assertThat(split.ranges()).as(shape).isEqualTo(264);
					assertSameSearch(shape, vectors, dim, queries, k, split, result);
				}
			}
		}
	}

	@Test
	void kAboveTheBoundStillMergesWithKnnTopk() {
		try (Engine engine = new Engine(2)) {
			int dim = 16;
			int n = 5000;
			Random random = new Random(107);
			float[] vectors = Reference.storedRows(random, n, dim, false);
			float[] queries = Reference.queries(random, 3, dim);
			int k = KnnGeometry.MERGE_MAX_K + 1;
			Launches before = engine.launches();
			SearchRun.Result result = engine.search(vectors, dim, queries, k);
			Launches used = engine.launches().minus(before);
			assertThat(used.fused()).isEqualTo(1);
			assertThat(used.merge()).isZero();
			assertThat(used.topk()).isEqualTo(1); // 27 ranges x 33 entries: one chunk of 2,048
			assertSameSearch("k=" + k, vectors, dim, queries, k, DeviceSearch.split(engine.context.device(), n, 3), result);
		}
	}

	@Test
	void moreRangesThanTheMergeTakesStillMergeWithKnnTopk() {
		// 65 workers x 16 = 1,040 ranges of 64 rows, past the 1,024 lists knn_merge's largest block owns.
		try (Engine engine = new Engine(65)) {
			int dim = 4;
			int n = 1040 * KnnGeometry.SCAN_TILE;
			Random random = new Random(109);
			float[] vectors = Reference.storedRows(random, n, dim, false);
			float[] queries = Reference.queries(random, 2, dim);
			DeviceSearch.Split split = DeviceSearch.split(engine.context.device(), n, 2);
			assertThat(split.ranges()).isEqualTo(1040);
			Launches before = engine.launches();
			SearchRun.Result result = engine.search(vectors, dim, queries, 10);
			Launches used = engine.launches().minus(before);
			assertThat(used.merge()).isZero();
			assertThat(used.topk()).isEqualTo(2); // 10,400 candidates: 6 chunks, then one
			assertSameSearch("1,040 ranges", vectors, dim, queries, 10, split, result);
		}
	}

	/**
	 * The search's entries against the general path (knn_score + knn_topk), against the fused path's
	 * merge before knn_merge (the same ranges' lists through knn_topk's passes) and against a
	 * brute-force ranking.
	 */
	private static void assertSameSearch(String shape, float[] vectors, int dim, float[] queries, int k,
			DeviceSearch.Split split, SearchRun.Result result) {
		int count = queries.length / dim;
		TopKAssertions.assertSameTopK(shape + ", brute force", Reference.topK(vectors, dim, queries, k, 0, vectors.length / dim),
				result, k);
		TopKAssertions.assertSameTopK(shape + ", general path", run.general(vectors, dim, queries, k), result, k);
		SearchRun.Result lists = run.fusedLists(vectors, dim, queries, k, split.rowsPerBlock(),
				DeviceSearch.groupQueries(run.context.device(), count), split.ranges());
		TopKAssertions.assertSameTopK(shape + ", knn_fused + knn_topk",
				merges.topkPasses(new MergeRun.Lists(count, split.ranges(), k, lists.scores(), lists.slots())), result, k);
	}

	/** Launches of the three kernels of a fused search. */
	record Launches(long fused, long merge, long topk) {

		Launches minus(Launches other) {
			return new Launches(this.fused - other.fused, this.merge - other.merge, this.topk - other.topk);
		}

	}

	/**
	 * A {@link KnnEngine} as {@code StoreFixture} builds one (kernels loaded on request), one group per
	 * search, on a CPU device of {@code workers} worker threads.
	 */
	private static final class Engine implements AutoCloseable {

		final GpuContext context;

		private final KnnEngine engine;

		Engine(int workers) {
			this.context = GpuContext.builder().backend(Backend.CPU).poolSize(2).maxSize(8).cpuThreads(workers).open();
			try {
				this.engine = StoreFixture.engine(this.context, 1, 1024, 64L << 20, Duration.ofSeconds(60));
			}
			catch (RuntimeException ex) {
				this.context.close();
				throw ex;
			}
		}

		SearchRun.Result search(float[] vectors, int dim, float[] queries, int k) {
			try (DeviceBuffer rows = this.context.launcher().upload(HostArray.of(vectors))) {
				TopK top = this.engine.search(rows, vectors.length / dim, dim, queries, queries.length / dim, k);
				return new SearchRun.Result(top.scores(), top.slots());
			}
		}

		Launches launches() {
			return new Launches(launches(KnnKernels.FUSED.name()), launches(KnnKernels.MERGE.name()),
					launches(KnnKernels.TOPK.name()));
		}

		private long launches(String kernel) {
			return this.context.launcher()
				.kernels()
				.stream()
				.filter((loaded) -> loaded.name().equals(kernel))
				.mapToLong((loaded) -> loaded.stats().launches())
				.sum();
		}

		@Override
		public void close() {
			this.context.close();
		}

	}

}
