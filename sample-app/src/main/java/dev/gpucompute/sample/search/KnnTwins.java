package dev.gpucompute.sample.search;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;

import org.jspecify.annotations.Nullable;

import dev.gpucompute.CpuKernel;

import static dev.gpucompute.sample.search.KnnGeometry.CHUNK;
import static dev.gpucompute.sample.search.KnnGeometry.LANES;
import static dev.gpucompute.sample.search.KnnGeometry.TILE_Q;
import static dev.gpucompute.sample.search.KnnGeometry.TILE_V;
import static dev.gpucompute.sample.search.KnnGeometry.paddedDimension;
import static dev.gpucompute.sample.search.KnnKernels.NO_ID;
import static dev.gpucompute.sample.search.KnnKernels.better;

/**
 * The CPU bodies of the search kernels the CPU backend runs instead of the CUDA code: {@code knn_score},
 * {@code knn_topk}, {@code knn_merge}, {@code knn_sort_init}, {@code knn_bitonic_step} and
 * {@code knn_scatter} ({@code knn_fused}'s is {@link FusedTwin}). Each runs one CUDA block and writes
 * what the CUDA block writes, the same bits (see {@link KnnKernels} for the arithmetic both perform).
 * Where the CUDA code has threads run at once, a twin computes the same values in another order of
 * independent steps; every individual value is computed by the same operations.
 *
 * <p>Stateless apart from per-worker scratch arrays: the CPU backend calls a twin once per block, on
 * several workers at once.
 */
final class KnnTwins {

	/** Per-worker scratch of the CPU twins: tiles, lanes and a top-k chunk. */
	private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

	private KnnTwins() {
	}

	static void score(CpuKernel.Block block, CpuKernel.Args args) {
		int m = args.i32(0);
		int dim = args.i32(1);
		int count = args.i32(2);
		long first = args.i64(3);
		int q0 = block.x() * TILE_Q;
		int v0 = block.y() * TILE_V;
		int qRows = Math.min(TILE_Q, count - q0);
		int vRows = Math.min(TILE_V, m - v0);
		if (qRows <= 0 || vRows <= 0) {
			return;
		}
		FloatBuffer vectors = args.floats(4);
		FloatBuffer queries = args.floats(5);
		FloatBuffer scores = args.floats(6);
		int padded = paddedDimension(dim);
		Scratch scratch = SCRATCH.get();
		float[] queryTile = scratch.queryTile(padded);
		float[] vectorTile = scratch.vectorTile(padded);
		float[] out = scratch.out;
		// Bulk copies into heap tiles only change where the operands are read from, not the arithmetic.
		copyRows(queries, (long) q0 * dim, qRows, dim, padded, queryTile);
		int paddedRows = (vRows + 3) & ~3;
		if (!scratch.holdsVectorTile(args, block.y())) {
			copyRows(vectors, (first + v0) * dim, vRows, dim, padded, vectorTile);
			java.util.Arrays.fill(vectorTile, vRows * padded, paddedRows * padded, 0f);
		}
		CpuScoring.scorer().score(queryTile, qRows, vectorTile, paddedRows, padded, out, scratch.lanes);
		for (int qi = 0; qi < qRows; qi++) {
			int row = qi * TILE_V;
			for (int vi = 0; vi < vRows; vi++) {
				if (Float.isNaN(out[row + vi])) {
					out[row + vi] = Float.NEGATIVE_INFINITY;
				}
			}
			scores.put((int) ((long) (q0 + qi) * m + v0), out, row, vRows);
		}
	}

	/** Copies {@code rows} rows of {@code dim} floats into rows of {@code padded}, zero-filling each row's tail. */
	static void copyRows(FloatBuffer from, long offset, int rows, int dim, int padded, float[] to) {
		if (padded == dim) {
			// Rows are back to back in both: one bulk copy (per-row copies cost more than the scoring at dim 128).
			from.get((int) offset, to, 0, rows * dim);
			return;
		}
		for (int r = 0; r < rows; r++) {
			from.get((int) (offset + (long) r * dim), to, r * padded, dim);
			if (padded > dim) {
				java.util.Arrays.fill(to, r * padded + dim, (r + 1) * padded, 0f);
			}
		}
	}

	/**
	 * The CPU twin of {@code knn_topk}: the same output as sorting the padded chunk best-first and keeping
	 * the first {@code keep}, found with a bounded heap (about one comparison per candidate for small k)
	 * instead of a bitonic network (about 66,000 compare-exchanges per chunk).
	 */
	static void topk(CpuKernel.Block block, CpuKernel.Args args) {
		int m = args.i32(0);
		int k = args.i32(1);
		boolean useIds = args.i32(2) != 0;
		int idBase = args.i32(3);
		FloatBuffer inScores = args.floats(4);
		IntBuffer inIds = useIds ? args.ints(5) : null;
		FloatBuffer outScores = args.floats(6);
		IntBuffer outIds = args.ints(7);
		Scratch scratch = SCRATCH.get();
		float[] score = scratch.score;
		int[] id = scratch.id;
		int chunk = block.x();
		long q = block.y();
		int keep = Math.min(k, CHUNK);
		int base = chunk * CHUNK;
		// A chunk past the row (no launch of the engine's has one) ends as the kernel's does: all padding.
		int real = Math.max(0, Math.min(CHUNK, m - base));
		int row = (int) (q * m + Math.min(base, m));
		inScores.get(row, score, 0, real);
		if (inIds != null) {
			inIds.get(row, id, 0, real);
		}
		TopKHeap heap = scratch.heap;
		select(score, useIds ? id : null, idBase + base, real, heap.reset(keep));
		// A bitonic sort of the chunk would put its (-inf, NO_ID) padding after every real candidate.
		heap.sortPadded(keep);
		int out = (int) ((q * block.gridDim().x() + chunk) * keep);
		outScores.put(out, heap.scores(), 0, keep);
		outIds.put(out, heap.ids(), 0, keep);
	}

	/**
	 * Offers {@code count} candidates to {@code heap}.
	 * @param id the candidates' ids, or null for {@code firstId + i}
	 */
	static void select(float[] score, int @Nullable [] id, int firstId, int count, TopKHeap heap) {
		for (int i = 0; i < count; i++) {
			heap.offer(score[i], (id != null) ? id[i] : firstId + i);
		}
	}

	/**
	 * The CPU twin of {@code knn_merge}: a k-way merge of the query's lists by (score desc, id asc, list
	 * asc), the order in which the kernel's block-wide argmax picks its winner each round, so every
	 * round takes the same entry. A block of a launch the kernel does not define writes nothing, as the
	 * kernel's does ({@link KnnLaunchRules#checkMerge} refuses such a launch before it is enqueued).
	 */
	static void merge(CpuKernel.Block block, CpuKernel.Args args) {
		int runs = args.i32(0);
		int k = args.i32(1);
		if (!KnnLaunchRules.mergeDefines(runs, k, block.blockDim().x())) {
			return;
		}
		FloatBuffer inScores = args.floats(2);
		IntBuffer inIds = args.ints(3);
		FloatBuffer outScores = args.floats(4);
		IntBuffer outIds = args.ints(5);
		long q = block.x();
		long first = q * runs * k;
		int out = (int) (q * k);
		int[] position = SCRATCH.get().positions(runs);
		for (int r = 0; r < k; r++) {
			int winner = -1;
			float winnerScore = Float.NEGATIVE_INFINITY;
			int winnerId = NO_ID;
			for (int run = 0; run < runs; run++) {
				int p = position[run];
				int at = (int) (first + (long) run * k + p);
				float s = (p < k) ? inScores.get(at) : Float.NEGATIVE_INFINITY;
				int id = (p < k) ? inIds.get(at) : NO_ID;
				// Runs in increasing order: an equal (score, id) keeps the lower run, as the kernel's order does.
				if (winner < 0 || better(s, id, winnerScore, winnerId)) {
					winner = run;
					winnerScore = s;
					winnerId = id;
				}
			}
			if (winnerId == NO_ID && winnerScore == Float.NEGATIVE_INFINITY) {
				// Nothing ranks after padding: every list is at its padding, and so is the rest.
				for (int i = r; i < k; i++) {
					outScores.put(out + i, Float.NEGATIVE_INFINITY);
					outIds.put(out + i, NO_ID);
				}
				return;
			}
			outScores.put(out + r, winnerScore);
			outIds.put(out + r, winnerId);
			position[winner]++;
		}
	}

	static void sortInit(CpuKernel.Block block, CpuKernel.Args args) {
		int n = args.i32(0);
		int p = args.i32(1);
		int idBase = args.i32(2);
		FloatBuffer scores = args.floats(3);
		FloatBuffer s = args.floats(4);
		IntBuffer ids = args.ints(5);
		long q = block.y();
		for (long i = block.firstIndex(); i < block.endIndex(p); i++) {
			int o = (int) (q * p + i);
			if (i < n) {
				s.put(o, scores.get((int) (q * n + i)));
				ids.put(o, idBase + (int) i);
			}
			else {
				s.put(o, Float.NEGATIVE_INFINITY);
				ids.put(o, NO_ID);
			}
		}
	}

	static void bitonicStep(CpuKernel.Block block, CpuKernel.Args args) {
		int p = args.i32(0);
		int size = args.i32(1);
		int stride = args.i32(2);
		FloatBuffer s = args.floats(3);
		IntBuffer ids = args.ints(4);
		int row = block.y() * p;
		for (long t = block.firstIndex(); t < block.endIndex(p / 2); t++) {
			int i = (int) (2 * t - (t & (stride - 1)));
			int j = i + stride;
			boolean bestFirst = (i & size) == 0;
			float si = s.get(row + i);
			float sj = s.get(row + j);
			int ii = ids.get(row + i);
			int ij = ids.get(row + j);
			if (better(sj, ij, si, ii) == bestFirst) {
				s.put(row + i, sj);
				s.put(row + j, si);
				ids.put(row + i, ij);
				ids.put(row + j, ii);
			}
		}
	}

	static void scatter(CpuKernel.Block block, CpuKernel.Args args) {
		long total = args.i64(0);
		int dim = args.i32(1);
		IntBuffer slots = args.ints(2);
		FloatBuffer rows = args.floats(3);
		FloatBuffer vectors = args.floats(4);
		for (long e = block.firstIndex(); e < block.endIndex(total); e++) {
			long r = e / dim;
			long j = e - r * dim;
			vectors.put((int) ((long) slots.get((int) r) * dim + j), rows.get((int) e));
		}
	}

	private static final class Scratch {

		final float[] lanes = new float[LANES];

		final float[] out = new float[TILE_Q * TILE_V];

		final float[] score = new float[CHUNK];

		final int[] id = new int[CHUNK];

		final TopKHeap heap = new TopKHeap(CHUNK);

		private int[] positions = new int[0];

		/** {@code runs} list positions of {@code knn_merge}'s twin, all 0. */
		int[] positions(int runs) {
			if (this.positions.length < runs) {
				this.positions = new int[runs];
			}
			java.util.Arrays.fill(this.positions, 0, runs, 0);
			return this.positions;
		}

		private float[] queryTile = new float[0];

		private float[] vectorTile = new float[0];

		/**
		 * The launch whose vector tile {@link #vectorTileY} {@link #vectorTile} holds. Blocks run in
		 * runs of consecutive linear indices (x fastest), so a worker meets the same vector tile once
		 * per query tile in a row and copies it only the first time. A launch is identified by its
		 * {@link CpuKernel.Args} instance (one per launch), held weakly so that a finished launch's
		 * buffers are not kept reachable; a collection rewritten between searches is read by a new
		 * launch, so a stale tile is never reused. Within a launch the vectors are read-only.
		 */
		private java.lang.ref.WeakReference<CpuKernel.Args> vectorTileLaunch = new java.lang.ref.WeakReference<>(null);

		private int vectorTileY = -1;

		float[] queryTile(int padded) {
			if (this.queryTile.length < TILE_Q * padded) {
				this.queryTile = new float[TILE_Q * padded];
			}
			return this.queryTile;
		}

		float[] vectorTile(int padded) {
			if (this.vectorTile.length < TILE_V * padded) {
				this.vectorTile = new float[TILE_V * padded];
				this.vectorTileY = -1;
			}
			return this.vectorTile;
		}

		/**
		 * Whether {@link #vectorTile} already holds vector tile {@code y} of this launch; if not, records
		 * that it is about to (the caller then copies it). Call after {@link #vectorTile(int)}.
		 */
		boolean holdsVectorTile(CpuKernel.Args launch, int y) {
			if (this.vectorTileLaunch.get() != launch) {
				this.vectorTileLaunch = new java.lang.ref.WeakReference<>(launch);
			}
			else if (this.vectorTileY == y) {
				return true;
			}
			this.vectorTileY = y;
			return false;
		}

	}

}
