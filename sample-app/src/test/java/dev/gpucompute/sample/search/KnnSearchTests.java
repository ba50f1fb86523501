package dev.gpucompute.sample.search;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;


import dev.gpucompute.sample.BruteForce;
import dev.gpucompute.sample.storage.CollectionFiles;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The arithmetic of the search kernels' CPU twins: the Vector API paths (512-bit and 256-bit) and the
 * scalar path give the same bits for every score, also after the JIT compiled them; the top-k selection
 * gives exactly the entries of a full sort; and a search on the general path, through slabs, gives a query the
 * same bits alone and inside a batch of 100, equal to a brute-force ranking.
 */
class KnnSearchTests {

	@TempDir
	Path dataDir;

	private GpuContext context;

	private CollectionStore store;

	@BeforeEach
	void open() {
		this.context = GpuContext.builder().backend(Backend.CPU).poolSize(2).maxSize(8).cpuThreads(2).open();
	}

	@AfterEach
	void close() {
		if (this.store != null) {
			this.store.close();
		}
		this.context.close();
	}

	@Test
	void theTestJvmScoresWithSimd() {
		// Surefire starts the JVM with --add-modules jdk.incubator.vector, so the SIMD path must be active
		// wherever the hardware has vectors of 256 bits or more (narrower ones use the scalar path).
		org.junit.jupiter.api.Assumptions.assumeTrue(jdk.incubator.vector.FloatVector.SPECIES_PREFERRED.length() >= 8,
				"vectors narrower than 256 bits");
		assertThat(CpuScoring.simdActive()).as(CpuScoring.scoringPath()).isTrue();
		assertThat(CpuScoring.scoringPath()).startsWith("CPU scoring: Vector API");
	}

	@ParameterizedTest(name = "dimension {0}")
	@ValueSource(ints = { 1, 7, 15, 16, 17, 33, 128, 384, 385 })
	void simdAndScalarGiveTheSameBits(int dim) {
		Random random = new Random(dim);
		int padded = KnnGeometry.paddedDimension(dim);
		List<TileScorer> scorers = List.of(new TileScorer.Scalar(), new SimdTileScorer.Wide(), new SimdTileScorer.Narrow());
		for (int round = 0; round < 20; round++) {
			int qRows = 1 + random.nextInt(KnnGeometry.TILE_Q);
			int vRows = 4 * (1 + random.nextInt(KnnGeometry.TILE_V / 4));
			// Mixed magnitudes, so that rounding differences between orders would show.
			float[] queries = tile(random, qRows, dim, padded, round % 3 == 0);
			float[] vectors = tile(random, vRows, dim, padded, round % 3 == 1);
			int[] expected = null;
			for (TileScorer scorer : scorers) {
				float[] out = new float[KnnGeometry.TILE_Q * KnnGeometry.TILE_V];
				scorer.score(queries, qRows, vectors, vRows, padded, out, new float[KnnGeometry.LANES]);
				int[] bits = bits(out, qRows, vRows);
				if (expected == null) {
					expected = bits;
					assertThat(bits).as("the scalar path follows the definition").isEqualTo(definition(queries, qRows,
							vectors, vRows, dim, padded));
				}
				else {
					assertThat(bits).as(scorer.description() + ", dimension " + dim + ", " + qRows + "x" + vRows)
						.isEqualTo(expected);
				}
			}
		}
	}

	@Test
	void simdBitsDoNotChangeOnceTheJitCompiledThem() {
		Random random = new Random(3);
		int dim = 33;
		int padded = KnnGeometry.paddedDimension(dim);
		float[] queries = tile(random, 16, dim, padded, true);
		float[] vectors = tile(random, 64, dim, padded, false);
		TileScorer scorer = CpuScoring.scorer();
		float[] out = new float[KnnGeometry.TILE_Q * KnnGeometry.TILE_V];
		scorer.score(queries, 13, vectors, 64, padded, out, new float[KnnGeometry.LANES]);
		int[] first = bits(out, 13, 64);
		for (int i = 0; i < 20_000; i++) {
			scorer.score(queries, 13, vectors, 64, padded, out, new float[KnnGeometry.LANES]);
		}
		assertThat(bits(out, 13, 64)).isEqualTo(first);
	}

	@Test
	void topkSelectionKeepsExactlyTheEntriesOfASortedChunk() {
		Random random = new Random(5);
		for (int round = 0; round < 200; round++) {
			int count = 1 + random.nextInt(KnnGeometry.CHUNK);
			int keep = 1 + random.nextInt((round % 2 == 0) ? 20 : KnnGeometry.CHUNK);
			float[] score = new float[count];
			int[] id = new int[count];
			for (int i = 0; i < count; i++) {
				// Few distinct scores (many ties), some -inf, and padding entries from an earlier pass.
				int kind = random.nextInt(20);
				score[i] = (kind == 0) ? Float.NEGATIVE_INFINITY : random.nextInt(8) / 4f - 1;
				id[i] = (kind == 1) ? KnnKernels.NO_ID : random.nextInt(1_000_000);
				if (kind == 1) {
					score[i] = Float.NEGATIVE_INFINITY;
				}
			}
			boolean implicitIds = round % 3 == 0;
			if (implicitIds) {
				// The first pass: ids are positions from a slab's first slot.
				for (int i = 0; i < count; i++) {
					id[i] = 5000 + i;
				}
			}
			TopKHeap heap = new TopKHeap(KnnGeometry.CHUNK).reset(keep);
			KnnTwins.select(score.clone(), implicitIds ? null : id.clone(), 5000, count, heap);
			int size = heap.sort();
			float[] heapScore = heap.scores();
			int[] heapId = heap.ids();
			Integer[] order = IntStream.range(0, count).boxed().toArray(Integer[]::new);
			Arrays.sort(order, Comparator.<Integer>comparingDouble((i) -> -score[i]).thenComparingInt((i) -> id[i]));
			assertThat(size).isEqualTo(Math.min(keep, count));
			for (int r = 0; r < size; r++) {
				assertThat(heapScore[r]).as("score at rank " + r).isEqualTo(score[order[r]]);
				assertThat(heapId[r]).as("id at rank " + r).isEqualTo(id[order[r]]);
			}
		}
	}

	@Test
	void aQueryGetsTheSameBitsAloneAndInABatchOnTheGeneralPathThroughSlabs() {
		int size = 70_000;
		int dim = 7;
		// Above FUSED_MAX_K: the general path (score matrix + knn_topk).
		int k = KnnGeometry.FUSED_MAX_K + 72;
		// Room for 100 queries against two CHUNK-aligned slabs of 32,768: the batch runs in three slabs.
		long scratch = 100 * DeviceSearch.scratchPerQuery(DeviceSearch.MIN_SLAB, k);
		DeviceSearch.Plan plan = DeviceSearch.plan(size, k, 100, scratch);
		assertThat(plan).isEqualTo(new DeviceSearch.Plan(100, DeviceSearch.MIN_SLAB));
		this.store = newStore(scratch);
		Random random = new Random(17);
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "v" + i).toList();
		float[][] vectors = BruteForce.randomVectors(random, size, dim);
		// Duplicates give exact ties, which must go to the lower slot however the slabs fall.
		for (int i = 0; i < 50; i++) {
			vectors[size - 1 - i] = vectors[i].clone();
		}
		this.store.create("s", dim, Metric.DOT);
		this.store.upsert("s", ids, flat(vectors));
		float[][] queries = BruteForce.randomVectors(random, 100, dim);
		List<List<Hit>> batch = this.store.search("s", flat(queries), k);
		for (int q = 0; q < queries.length; q++) {
			List<Hit> alone = this.store.search("s", queries[q].clone(), k).get(0);
			assertThat(hitBits(alone)).as("query " + q + " alone and in the batch").isEqualTo(hitBits(batch.get(q)));
			if (q % 10 == 0) {
				List<BruteForce.Expected> ranking = BruteForce.ranking(ids, vectors, queries[q], false);
				float[] scores = new float[k];
				for (int r = 0; r < k; r++) {
					scores[r] = batch.get(q).get(r).score();
				}
				BruteForce.assertSameResults(batch.get(q).stream().map(Hit::id).toList(), scores, ranking, k, "query " + q);
			}
		}
	}

	@Test
	void aRewrittenCollectionIsScoredFromItsNewVectors() {
		// One vector tile and three query tiles: each worker reuses its copy of the tile for the next
		// query tile of the same launch, and the search after the rewrite must not reuse it.
		int size = 60;
		int dim = 128;
		int k = 5;
		this.store = newStore(64L << 20);
		Random random = new Random(23);
		List<String> ids = IntStream.range(0, size).mapToObj((i) -> "v" + i).toList();
		this.store.create("r", dim, Metric.DOT);
		float[][] queries = BruteForce.randomVectors(random, 40, dim);
		for (int round = 0; round < 3; round++) {
			float[][] vectors = BruteForce.randomVectors(random, size, dim);
			this.store.upsert("r", ids, flat(vectors));
			List<List<Hit>> batch = this.store.search("r", flat(queries), k);
			for (int q = 0; q < queries.length; q++) {
				float[] scores = new float[k];
				for (int r = 0; r < k; r++) {
					scores[r] = batch.get(q).get(r).score();
				}
				BruteForce.assertSameResults(batch.get(q).stream().map(Hit::id).toList(), scores,
						BruteForce.ranking(ids, vectors, queries[q], false), k, "round " + round + ", query " + q);
			}
		}
	}

	private CollectionStore newStore(long scratch) {
		KnnEngine engine = StoreFixture.engine(this.context, 4, 128, scratch, Duration.ofSeconds(60));
		CollectionStore created = new CollectionStore(engine, new CollectionFiles(this.dataDir),
				new DeviceMemoryBudget(64L << 20), new CollectionStore.Limits(4096, 1024, 256, 1_000_000),
				CollectionStore.Durability.DEFAULT);
		created.start();
		return created;
	}

	private static List<String> hitBits(List<Hit> hits) {
		List<String> bits = new ArrayList<>();
		for (Hit hit : hits) {
			bits.add(hit.id() + "=" + Integer.toHexString(Float.floatToRawIntBits(hit.score())));
		}
		return bits;
	}

	private static float[] flat(float[][] rows) {
		int dim = rows[0].length;
		float[] flat = new float[rows.length * dim];
		for (int i = 0; i < rows.length; i++) {
			System.arraycopy(rows[i], 0, flat, i * dim, dim);
		}
		return flat;
	}

	private static float[] tile(Random random, int rows, int dim, int padded, boolean wide) {
		float[] tile = new float[rows * padded];
		for (int r = 0; r < rows; r++) {
			for (int j = 0; j < dim; j++) {
				double scale = wide ? Math.pow(10, random.nextInt(9) - 4) : 1;
				tile[r * padded + j] = (float) (random.nextGaussian() * scale);
			}
		}
		return tile;
	}

	private static int[] bits(float[] out, int qRows, int vRows) {
		int[] bits = new int[qRows * vRows];
		for (int q = 0; q < qRows; q++) {
			for (int v = 0; v < vRows; v++) {
				bits[q * vRows + v] = Float.floatToRawIntBits(out[q * KnnGeometry.TILE_V + v]);
			}
		}
		return bits;
	}

	/** The score as KnnKernels defines it, written out independently: strided lanes, then the fixed tree. */
	private static int[] definition(float[] queries, int qRows, float[] vectors, int vRows, int dim, int padded) {
		int[] bits = new int[qRows * vRows];
		for (int q = 0; q < qRows; q++) {
			for (int v = 0; v < vRows; v++) {
				float[] lane = new float[16];
				for (int j = 0; j < dim; j++) {
					lane[j % 16] = Math.fma(queries[q * padded + j], vectors[v * padded + j], lane[j % 16]);
				}
				float s = (((lane[0] + lane[8]) + (lane[4] + lane[12])) + ((lane[2] + lane[10]) + (lane[6] + lane[14])))
						+ (((lane[1] + lane[9]) + (lane[5] + lane[13])) + ((lane[3] + lane[11]) + (lane[7] + lane[15])));
				bits[q * vRows + v] = Float.floatToRawIntBits(s);
			}
		}
		return bits;
	}

}
