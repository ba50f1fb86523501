package dev.gpucompute.sample.search;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.sample.BruteForce;
import dev.gpucompute.sample.storage.CollectionFiles;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The search core against the runtime directly (no Spring), on the CPU backend: results equal a
 * brute-force reference for both metrics over collections of several sizes and dimensions, every
 * top-k path (single pass, several chunked passes, whole-row sort), batches split over streams,
 * writes that replace and grow, concurrent searches and writes, requests refused as busy when the
 * stream pool has no room for them in time, and restart from the data directory.
 */
class CollectionStoreTests {

	@TempDir
	Path dataDir;

	private GpuContext context;

	private CollectionStore store;

	@BeforeEach
	void open() {
		this.context = GpuContext.builder().backend(Backend.CPU).poolSize(2).maxSize(8).cpuThreads(2).open();
		this.store = newStore(this.context, 64L << 20, 4);
	}

	@AfterEach
	void close() {
		if (this.store != null) {
			this.store.close();
		}
		if (this.context != null) {
			this.context.close();
		}
	}

	private CollectionStore newStore(GpuContext context, long budget, int parallelism) {
		return newStore(context, budget, parallelism, 64L << 20);
	}

	private CollectionStore newStore(GpuContext context, long budget, int parallelism, long scratch) {
		return newStore(context, budget, parallelism, scratch, Duration.ofSeconds(60));
	}

	private CollectionStore newStore(GpuContext context, long budget, int parallelism, long scratch,
			Duration deviceTimeout) {
		KnnEngine engine = StoreFixture.engine(context, parallelism, 2, scratch, deviceTimeout);
		CollectionStore created = new CollectionStore(engine, new CollectionFiles(this.dataDir), new DeviceMemoryBudget(budget),
				new CollectionStore.Limits(4096, 1024, 256, 1_000_000), CollectionStore.Durability.DEFAULT);
		created.start();
		return created;
	}

	@ParameterizedTest(name = "{0} vectors of dimension {1}, {2}")
	@CsvSource({ "1, 1, cosine", "1, 5, dot", "17, 3, cosine", "300, 64, dot", "300, 64, cosine", "2049, 33, cosine",
			"2049, 33, dot", "5000, 128, cosine", "5000, 16, dot" })
	void searchEqualsBruteForce(int size, int dimension, String metricName) {
		Metric metric = Metric.fromJson(metricName);
		Random random = new Random(size * 31L + dimension);
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "v" + i).toList();
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		this.store.create("c", dimension, metric);
		// Two writes, so that the second one grows the device storage past its first capacity.
		int half = size / 2;
		if (half > 0) {
			this.store.upsert("c", ids.subList(0, half), flat(vectors, 0, half));
		}
		this.store.upsert("c", ids.subList(half, size), flat(vectors, half, size));
		assertThat(this.store.get("c").size()).isEqualTo(size);
		float[][] queries = BruteForce.randomVectors(random, 9, dimension);
		for (int k : new int[] { 1, Math.min(size, 10), Math.min(size, 1024), size }) {
			List<List<Hit>> results = this.store.search("c", flat(queries, 0, queries.length), k);
			assertMatches(results, ids, vectors, queries, k, metric, size + "x" + dimension + " " + metric + " k=" + k);
		}
		assertIdle();
	}

	@Test
	void replacingVectorsKeepsTheirIdsAndChangesTheirScores() {
		Random random = new Random(7);
		int size = 500;
		int dimension = 24;
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "doc-" + i).toList();
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		this.store.create("r", dimension, Metric.DOT);
		this.store.upsert("r", ids, flat(vectors, 0, size));
		float[][] replacement = BruteForce.randomVectors(random, 100, dimension);
		List<String> replacedIds = new ArrayList<>();
		for (int i = 0; i < 100; i++) {
			int slot = i * 5;
			replacedIds.add(ids.get(slot));
			vectors[slot] = replacement[i];
		}
		CollectionStore.Upserted outcome = this.store.upsert("r", replacedIds, flat(replacement, 0, 100));
		assertThat(outcome).isEqualTo(new CollectionStore.Upserted(0, 100, size));
		float[][] queries = BruteForce.randomVectors(random, 5, dimension);
		assertMatches(this.store.search("r", flat(queries, 0, 5), 20), ids, vectors, queries, 20, Metric.DOT, "replaced");
		assertIdle();
	}

	@Test
	void aBatchIsSplitIntoStreamParallelGroupsAndSubBatches() {
		Random random = new Random(11);
		int size = 3000;
		int dimension = 32;
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "g" + i).toList();
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		this.store.close();
		// Scratch for two queries at a time: each group works through sub-batches.
		this.store = newStore(this.context, 64L << 20, 4,
				DeviceSearch.fusedScratch(2, DeviceSearch.split(this.context.device(), size, 2), 5));
		this.store.create("g", dimension, Metric.COSINE);
		this.store.upsert("g", ids, flat(vectors, 0, size));
		long acquisitionsBefore = this.context.streams().stats().acquisitions();
		float[][] queries = BruteForce.randomVectors(random, 40, dimension);
		List<List<Hit>> results = this.store.search("g", flat(queries, 0, 40), 5);
		assertMatches(results, ids, vectors, queries, 5, Metric.COSINE, "40 queries in 4 groups");
		// One lease per group, all held at once by the stream-parallel group.
		assertThat(this.context.streams().stats().acquisitions() - acquisitionsBefore).isEqualTo(4);
		assertThat(this.context.streams().stats().highWaterMark()).isGreaterThanOrEqualTo(4);
		assertIdle();
	}

	@Test
	void requestsWhoseStreamsAreNotFreeInTimeAreAnsweredBusyAndChangeNothing() {
		this.store.close();
		this.context.close();
		this.context = GpuContext.builder()
			.backend(Backend.CPU)
			.poolSize(2)
			.maxSize(4)
			.acquireTimeout(Duration.ofMillis(50))
			.cpuThreads(2)
			.open();
		this.store = newStore(this.context, 64L << 20, 4, 64L << 20, Duration.ofMillis(50));
		Random random = new Random(13);
		int dimension = 8;
		List<String> ids = IntStream.range(0, 100).mapToObj((i) -> "b" + i).toList();
		float[][] vectors = BruteForce.randomVectors(random, 100, dimension);
		this.store.create("b", dimension, Metric.DOT);
		this.store.upsert("b", ids, flat(vectors, 0, 100));
		long reserved = this.store.devices().get(0).budget().reservedBytes();
		float[][] queries = BruteForce.randomVectors(random, 16, dimension);
		StreamPool pool = this.context.streams();
		long timeoutsBefore = pool.stats().timeouts();

		// Three of four streams taken: a search of four groups gets none of the free one, a write gets it.
		List<StreamLease> held = pool.acquireAll(StreamPriority.NORMAL, 3, Duration.ZERO);
		try {
			assertBusy(() -> this.store.search("b", flat(queries, 0, 16), 3), 4);
			assertThat(pool.stats().active()).as("leased streams after the refused search").isEqualTo(3);
			this.store.upsert("b", List.of("b0"), flat(vectors, 0, 1));
			try (StreamLease last = pool.acquire(Duration.ZERO)) {
				assertBusy(() -> this.store.upsert("b", List.of("new"), flat(vectors, 1, 2)), 1);
				assertBusy(() -> this.store.search("b", flat(queries, 0, 1), 3), 1);
			}
		}
		finally {
			held.forEach(StreamLease::close);
		}
		assertThat(pool.stats().timeouts() - timeoutsBefore).as("lease timeouts").isEqualTo(3);
		assertThat(this.store.get("b").size()).isEqualTo(100);
		assertThat(this.store.devices().get(0).budget().reservedBytes()).isEqualTo(reserved);
		assertIdle();
		// With the streams back, the same requests succeed.
		assertMatches(this.store.search("b", flat(queries, 0, 16), 3), ids, vectors, queries, 3, Metric.DOT, "after busy");
		this.store.upsert("b", List.of("new"), flat(vectors, 1, 2));
		assertThat(this.store.get("b").size()).isEqualTo(101);
		assertIdle();
	}

	private static void assertBusy(org.assertj.core.api.ThrowableAssert.ThrowingCallable request, int streams) {
		assertThatThrownBy(request).isInstanceOfSatisfying(ServiceProblem.class, (problem) -> {
			assertThat(problem.status()).isEqualTo(503);
			assertThat(problem.type()).isEqualTo("busy");
			assertThat(problem.properties()).containsEntry("streams", streams);
			assertThat(problem.getCause()).isInstanceOf(PoolExhaustedException.class);
		});
	}

	@Test
	void concurrentSearchesOfSeveralGroupsShareThePoolWithoutLeaseTimeouts() throws Exception {
		Random random = new Random(29);
		int size = 600;
		int dimension = 16;
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "p" + i).toList();
		float[][] vectors = BruteForce.randomVectors(random, size, dimension);
		this.store.create("p", dimension, Metric.DOT);
		this.store.upsert("p", ids, flat(vectors, 0, size));
		StreamPool pool = this.context.streams();
		long timeoutsBefore = pool.stats().timeouts();
		// Six searchers of four groups each (8 queries, at least 2 per group) against a pool of 8:
		// taken one stream at a time, they could each hold part of the pool and wait for the rest.
		ExecutorService threads = Executors.newFixedThreadPool(6);
		try {
			List<Future<Integer>> searchers = new ArrayList<>();
			for (int t = 0; t < 6; t++) {
				int seed = 100 + t;
				searchers.add(threads.submit(() -> {
					Random r = new Random(seed);
					for (int i = 0; i < 10; i++) {
						float[][] queries = BruteForce.randomVectors(r, 8, dimension);
						assertMatches(this.store.search("p", flat(queries, 0, 8), 4), ids, vectors, queries, 4,
								Metric.DOT, "searcher " + seed + " round " + i);
					}
					return 10;
				}));
			}
			for (Future<Integer> searcher : searchers) {
				assertThat(searcher.get(60, TimeUnit.SECONDS)).isEqualTo(10);
			}
		}
		finally {
			threads.shutdownNow();
		}
		assertThat(pool.stats().timeouts()).as("lease timeouts").isEqualTo(timeoutsBefore);
		assertThat(pool.stats().highWaterMark()).isBetween(4, pool.maxSize());
		assertIdle();
	}

	@Test
	void concurrentSearchesSeeConsistentDataWhileWritesGrowTheCollection() throws Exception {
		Random random = new Random(3);
		int dimension = 16;
		float[][] base = BruteForce.randomVectors(random, 200, dimension);
		List<String> baseIds = IntStream.range(0, 200).mapToObj((i) -> "base-" + i).toList();
		this.store.create("live", dimension, Metric.COSINE);
		this.store.upsert("live", baseIds, flat(base, 0, 200));
		AtomicBoolean writing = new AtomicBoolean(true);
		ExecutorService threads = Executors.newFixedThreadPool(5);
		try {
			Future<Integer> writer = threads.submit(() -> {
				Random r = new Random(5);
				int written = 0;
				for (int batch = 0; batch < 30; batch++) {
					float[][] more = BruteForce.randomVectors(r, 100, dimension);
					int start = written;
					List<String> moreIds = IntStream.range(0, 100).mapToObj((i) -> "more-" + (start + i)).toList();
					this.store.upsert("live", moreIds, flat(more, 0, 100));
					written += 100;
				}
				writing.set(false);
				return written;
			});
			List<Future<Integer>> readers = new ArrayList<>();
			for (int t = 0; t < 4; t++) {
				int seed = t;
				readers.add(threads.submit(() -> {
					Random r = new Random(seed);
					int searches = 0;
					while (writing.get() || searches < 5) {
						int target = r.nextInt(200);
						// A stored vector is its own nearest neighbour with cosine 1, whatever else is added.
						List<List<Hit>> hits = this.store.search("live", base[target].clone(), 3);
						assertThat(hits.get(0).get(0).id()).isEqualTo("base-" + target);
						assertThat(hits.get(0).get(0).score()).isCloseTo(1f, org.assertj.core.data.Offset.offset(1e-5f));
						searches++;
					}
					return searches;
				}));
			}
			assertThat(writer.get(60, TimeUnit.SECONDS)).isEqualTo(3000);
			for (Future<Integer> reader : readers) {
				assertThat(reader.get(60, TimeUnit.SECONDS)).isGreaterThanOrEqualTo(5);
			}
		}
		finally {
			threads.shutdownNow();
		}
		assertThat(this.store.get("live").size()).isEqualTo(3200);
		assertIdle();
	}

	@Test
	void collectionsSurviveARestartWithIdenticalResults() throws Exception {
		Random random = new Random(17);
		float[][] a = BruteForce.randomVectors(random, 700, 20);
		float[][] b = BruteForce.randomVectors(random, 90, 7);
		List<String> aIds = IntStream.range(0, 700).mapToObj((i) -> "a" + i).toList();
		List<String> bIds = IntStream.range(0, 90).mapToObj((i) -> "b" + i).toList();
		this.store.create("alpha", 20, Metric.COSINE);
		this.store.create("beta", 7, Metric.DOT);
		this.store.create("empty", 3, Metric.DOT);
		this.store.upsert("alpha", aIds, flat(a, 0, 700));
		this.store.upsert("beta", bIds, flat(b, 0, 90));
		float[] qa = flat(BruteForce.randomVectors(random, 3, 20), 0, 3);
		float[] qb = flat(BruteForce.randomVectors(random, 2, 7), 0, 2);
		List<List<Hit>> beforeA = this.store.search("alpha", qa, 15);
		List<List<Hit>> beforeB = this.store.search("beta", qb, 90);
		List<CollectionInfo> listed = this.store.list();

		this.store.close();
		this.context.close();
		try (var files = Files.list(this.dataDir)) {
			assertThat(files.map((p) -> p.getFileName().toString()).sorted().toList()).containsExactly("alpha.vec",
					"alpha.wal", "beta.vec", "beta.wal", "empty.vec", "empty.wal");
		}
		for (String name : List.of("alpha", "beta", "empty")) {
			assertThat(Files.size(this.dataDir.resolve(name + ".wal"))).as("a clean shutdown folds the logs").isZero();
		}
		this.context = GpuContext.builder().backend(Backend.CPU).poolSize(2).maxSize(8).cpuThreads(2).open();
		this.store = newStore(this.context, 64L << 20, 4);

		assertThat(this.store.list()).isEqualTo(listed);
		assertThat(this.store.search("alpha", qa, 15)).isEqualTo(beforeA);
		assertThat(this.store.search("beta", qb, 90)).isEqualTo(beforeB);
		assertIdle();
	}

	/**
	 * A log of replacements adds no rows: a collection near its budget whose log holds many of them
	 * still loads (found by review: loading once reserved the snapshot's rows plus every logged row).
	 */
	@Test
	void aLogOfReplacementsLoadsIntoANearlyFullBudget(@TempDir Path crashed) throws Exception {
		this.store.close();
		this.store = newStore(this.context, 1000 * 32 * 4, 4);
		this.store.create("m", 32, Metric.DOT);
		Random random = new Random(5);
		List<String> ids = IntStream.range(0, 900).mapToObj((i) -> "m" + i).toList();
		this.store.upsert("m", ids, flat(BruteForce.randomVectors(random, 900, 32), 0, 900));
		this.store.flushAll();
		this.store.upsert("m", ids.subList(0, 800), flat(BruteForce.randomVectors(random, 800, 32), 0, 800));
		float[] queries = flat(BruteForce.randomVectors(random, 4, 32), 0, 4);
		List<List<Hit>> expected = this.store.search("m", queries, 10);
		// What a crash leaves: the snapshot and the synced log, copied while the store is running.
		for (String file : List.of("m.vec", "m.wal")) {
			Files.copy(this.dataDir.resolve(file), crashed.resolve(file));
		}
		assertThat(Files.size(crashed.resolve("m.wal"))).isGreaterThan(800L * 32 * 4);
		GpuLauncher launcher = this.context.launcher();
		CollectionStore restarted = new CollectionStore(StoreFixture.engine(this.context, 4, 2, 64L << 20,
				Duration.ofSeconds(60)), new CollectionFiles(crashed), new DeviceMemoryBudget(1000 * 32 * 4),
				new CollectionStore.Limits(4096, 1024, 256, 1_000_000), CollectionStore.Durability.DEFAULT);
		try {
			restarted.start();
			assertThat(restarted.get("m").size()).isEqualTo(900);
			assertThat(restarted.search("m", queries, 10)).isEqualTo(expected);
		}
		finally {
			restarted.close();
		}
		launcher.currentStream().synchronize();
	}

	@Test
	void writesBeyondTheMemoryBudgetAreRefusedAndChangeNothing() {
		this.store.close();
		// Room for 1000 vectors of dimension 32.
		this.store = newStore(this.context, 1000 * 32 * 4, 4);
		this.store.create("m", 32, Metric.DOT);
		Random random = new Random(1);
		List<String> ids = IntStream.range(0, 900).mapToObj((i) -> "m" + i).toList();
		this.store.upsert("m", ids, flat(BruteForce.randomVectors(random, 900, 32), 0, 900));
		long buffers = this.context.memory().liveBuffers();
		List<String> more = IntStream.range(900, 1101).mapToObj((i) -> "m" + i).toList();
		assertThatThrownBy(() -> this.store.upsert("m", more, flat(BruteForce.randomVectors(random, 201, 32), 0, 201)))
			.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> {
				assertThat(problem.status()).isEqualTo(422);
				assertThat(problem.type()).isEqualTo("memory-budget-exceeded");
			});
		assertThat(this.store.get("m").size()).isEqualTo(900);
		// Exactly up to the budget still fits (the doubled capacity would not).
		this.store.upsert("m", more.subList(0, 100), flat(BruteForce.randomVectors(random, 100, 32), 0, 100));
		assertThat(this.store.get("m").size()).isEqualTo(1000);
		assertThat(this.store.devices().get(0).budget().reservedBytes()).isEqualTo(1000 * 32 * 4);
		assertThat(this.context.memory().liveBuffers()).isEqualTo(buffers);
		this.store.delete("m");
		assertThat(this.store.devices().get(0).budget().reservedBytes()).isZero();
		assertIdle();
	}

	@Test
	void kernelsGiveTheSameBitsAsTheirDocumentedOrderOfOperations() {
		// knn_score's arithmetic, replayed independently: 16 logical lanes stride the dimensions with fma,
		// then a shuffle-down tree (width 16). The CPU twin must produce exactly these bits (the CUDA kernel does).
		Random random = new Random(23);
		int dimension = 77;
		float[][] v = BruteForce.randomVectors(random, 3, dimension);
		float[] q = BruteForce.randomVectors(random, 1, dimension)[0];
		this.store.create("bits", dimension, Metric.DOT);
		this.store.upsert("bits", List.of("x", "y", "z"), flat(v, 0, 3));
		List<Hit> hits = this.store.search("bits", q, 3).get(0);
		for (Hit hit : hits) {
			float[] row = v["xyz".indexOf(hit.id())];
			float[] lanes = new float[16];
			for (int lane = 0; lane < 16; lane++) {
				for (int j = lane; j < dimension; j += 16) {
					lanes[lane] = Math.fma(q[j], row[j], lanes[lane]);
				}
			}
			for (int offset = 8; offset > 0; offset >>= 1) {
				for (int lane = 0; lane < offset; lane++) {
					lanes[lane] += lanes[lane + offset];
				}
			}
			assertThat(Float.floatToIntBits(hit.score())).as(hit.id()).isEqualTo(Float.floatToIntBits(lanes[0]));
		}
		assertIdle();
	}

	private void assertMatches(List<List<Hit>> results, List<String> ids, float[][] vectors, float[][] queries, int k,
			Metric metric, String what) {
		assertThat(results).hasSize(queries.length);
		for (int q = 0; q < queries.length; q++) {
			List<Hit> hits = results.get(q);
			float[] scores = new float[hits.size()];
			for (int i = 0; i < scores.length; i++) {
				scores[i] = hits.get(i).score();
			}
			BruteForce.assertSameResults(hits.stream().map(Hit::id).toList(), scores,
					BruteForce.ranking(ids, vectors, queries[q], metric == Metric.COSINE), k, what + " query " + q);
		}
	}

	private void assertIdle() {
		assertThat(this.context.streams().stats().active()).as("leased streams").isZero();
		assertThat(this.context.events().inUse()).as("events in use").isZero();
	}

	static float[] flat(float[][] rows, int from, int to) {
		int dimension = rows[0].length;
		float[] flat = new float[(to - from) * dimension];
		for (int r = from; r < to; r++) {
			System.arraycopy(rows[r], 0, flat, (r - from) * dimension, dimension);
		}
		return flat;
	}

}
