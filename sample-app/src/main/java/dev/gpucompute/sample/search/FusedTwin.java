package dev.gpucompute.sample.search;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;

import dev.gpucompute.CpuKernel;

/**
 * The CPU twin of {@code knn_fused}: for the block's queries (any number: the engine gives the CPU
 * backend up to {@value DeviceSearch#CPU_GROUP_QUERIES} per block, so that each tile of rows is read
 * from memory once for all of them) and its range of rows, the top k of each
 * query, best first, padded with {@code (-inf, NO_ID)}, written where the CUDA block writes it
 * ({@code out[(q * gridDim.y + y) * k + r]}). Scores come from {@link CpuScoring#scorer()} (the
 * defined arithmetic, the same bits as {@code knn_score} and the CUDA kernel), NaN becomes
 * {@code -inf}, and a {@link TopKHeap} per query keeps the best k by the total order; so the entries
 * are those the CUDA block's sorted lists end with, whatever order either side scores rows in.
 *
 * <p>Like the CUDA block it writes no score matrix: each tile of {@value KnnGeometry#TILE_V} rows is
 * copied once into a heap array, scored against every query of the block ({@value KnnGeometry#TILE_Q}
 * at a time) and offered to the heaps while it is in the cache. Stateless apart from per-worker
 * scratch; called by the CPU backend once per block, blocks on several workers at once.
 */
final class FusedTwin {

	private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

	private FusedTwin() {
	}

	static void run(CpuKernel.Block block, CpuKernel.Args args) {
		int n = args.i32(0);
		int dim = args.i32(1);
		int count = args.i32(2);
		int k = args.i32(3);
		int rowsPerBlock = args.i32(4);
		int group = args.i32(5);
		int firstQuery = block.x() * group;
		int queries = Math.min(group, count - firstQuery);
		long first = (long) block.y() * rowsPerBlock;
		// A range past the last row (no launch of the engine's has one) ends as the kernel's does: all padding.
		int rows = (int) Math.max(0, Math.min(n - first, rowsPerBlock));
		if (!KnnLaunchRules.fusedDefines(false, group, k) || queries <= 0) {
			// A block the kernel does not define, or one past the last query: it writes nothing, as the
			// CUDA kernel's does (KnnLaunchRules.checkFused refuses such a launch before it is enqueued).
			return;
		}
		FloatBuffer vectors = args.floats(6);
		FloatBuffer queryRows = args.floats(7);
		int padded = KnnGeometry.paddedDimension(dim);
		Scratch scratch = SCRATCH.get();
		int queryTiles = (queries + KnnGeometry.TILE_Q - 1) / KnnGeometry.TILE_Q;
		float[][] tiles = scratch.queryTiles(queryTiles, padded);
		for (int t = 0; t < queryTiles; t++) {
			int from = firstQuery + t * KnnGeometry.TILE_Q;
			KnnTwins.copyRows(queryRows, (long) from * dim, Math.min(KnnGeometry.TILE_Q, firstQuery + queries - from),
					dim, padded, tiles[t]);
		}
		TopKHeap[] heaps = scratch.heaps(queries, k);
		float[] vectorTile = scratch.vectorTile(padded);
		float[] out = scratch.out;
		for (int v0 = 0; v0 < rows; v0 += KnnGeometry.TILE_V) {
			int vRows = Math.min(KnnGeometry.TILE_V, rows - v0);
			int paddedRows = (vRows + 3) & ~3;
			KnnTwins.copyRows(vectors, (first + v0) * dim, vRows, dim, padded, vectorTile);
			java.util.Arrays.fill(vectorTile, vRows * padded, paddedRows * padded, 0f);
			int firstId = (int) first + v0;
			for (int t = 0; t < queryTiles; t++) {
				int qRows = Math.min(KnnGeometry.TILE_Q, queries - t * KnnGeometry.TILE_Q);
				CpuScoring.scorer().score(tiles[t], qRows, vectorTile, paddedRows, padded, out, scratch.lanes);
				for (int qi = 0; qi < qRows; qi++) {
					TopKHeap heap = heaps[t * KnnGeometry.TILE_Q + qi];
					int row = qi * KnnGeometry.TILE_V;
					for (int vi = 0; vi < vRows; vi++) {
						float s = out[row + vi];
						heap.offer(Float.isNaN(s) ? Float.NEGATIVE_INFINITY : s, firstId + vi);
					}
				}
			}
		}
		FloatBuffer outScores = args.floats(8);
		IntBuffer outIds = args.ints(9);
		int ranges = block.gridDim().y();
		for (int qi = 0; qi < queries; qi++) {
			TopKHeap heap = heaps[qi];
			heap.sortPadded(k);
			int at = ((firstQuery + qi) * ranges + block.y()) * k;
			outScores.put(at, heap.scores(), 0, k);
			outIds.put(at, heap.ids(), 0, k);
		}
	}

	private static final class Scratch {

		final float[] lanes = new float[KnnGeometry.LANES];

		final float[] out = new float[KnnGeometry.TILE_Q * KnnGeometry.TILE_V];

		private TopKHeap[] heaps = new TopKHeap[0];

		private float[][] queryTiles = new float[0][];

		private float[] vectorTile = new float[0];

		float[][] queryTiles(int tiles, int padded) {
			if (this.queryTiles.length < tiles || this.queryTiles[0].length < KnnGeometry.TILE_Q * padded) {
				this.queryTiles = new float[Math.max(tiles, this.queryTiles.length)][KnnGeometry.TILE_Q * padded];
			}
			return this.queryTiles;
		}

		float[] vectorTile(int padded) {
			if (this.vectorTile.length < KnnGeometry.TILE_V * padded) {
				this.vectorTile = new float[KnnGeometry.TILE_V * padded];
			}
			return this.vectorTile;
		}

		TopKHeap[] heaps(int queries, int k) {
			if (this.heaps.length < queries) {
				this.heaps = java.util.Arrays.copyOf(this.heaps, queries);
			}
			for (int q = 0; q < queries; q++) {
				if (this.heaps[q] == null) {
					this.heaps[q] = new TopKHeap(KnnGeometry.FUSED_MAX_K);
				}
				this.heaps[q].reset(k);
			}
			return this.heaps;
		}

	}

}
