package dev.gpucompute.sample.search;

import java.util.Arrays;
import java.util.Random;
import java.util.stream.IntStream;

/**
 * The search written out from its definition, independently of the kernels and their twins: the score
 * of {@link KnnKernels} (16 strided lanes of fmas from +0 over the zero-padded dimensions, the fixed
 * tree, NaN as -inf) and the top k by the total order (higher score, then lower row), padded with
 * {@code (-inf, NO_ID)}. Also the test data: rows with ties, and rows whose scores overflow to
 * {@code +-inf} or {@code inf - inf = NaN}.
 */
final class Reference {

	private Reference() {
	}

	/** The defined score of one query row against one stored row, NaN ranked as -inf. */
	static float score(float[] queries, int q, float[] vectors, int v, int dim) {
		float s = rawScore(queries, q, vectors, v, dim);
		return Float.isNaN(s) ? Float.NEGATIVE_INFINITY : s;
	}

	/** The defined score before NaN becomes -inf. */
	static float rawScore(float[] queries, int q, float[] vectors, int v, int dim) {
		float[] lane = new float[16];
		int padded = KnnGeometry.paddedDimension(dim);
		for (int j = 0; j < padded; j++) {
			float x = (j < dim) ? queries[q * dim + j] : 0f;
			float y = (j < dim) ? vectors[v * dim + j] : 0f;
			lane[j % 16] = Math.fma(x, y, lane[j % 16]);
		}
		return (((lane[0] + lane[8]) + (lane[4] + lane[12])) + ((lane[2] + lane[10]) + (lane[6] + lane[14])))
				+ (((lane[1] + lane[9]) + (lane[5] + lane[13])) + ((lane[3] + lane[11]) + (lane[7] + lane[15])));
	}

	/** The top k of every query over rows {@code [from, to)}, best first, padded. */
	static SearchRun.Result topK(float[] vectors, int dim, float[] queries, int k, int from, int to) {
		int count = queries.length / dim;
		float[] scores = new float[count * k];
		int[] slots = new int[count * k];
		for (int q = 0; q < count; q++) {
			int query = q;
			float[] s = new float[to - from];
			for (int v = from; v < to; v++) {
				s[v - from] = score(queries, q, vectors, v, dim);
			}
			Integer[] order = IntStream.range(0, to - from).boxed().toArray(Integer[]::new);
			// The kernels' order: > on scores (-0 and +0 are equal), then the lower row.
			Arrays.sort(order, (a, b) -> (s[a] > s[b]) ? -1 : (s[a] < s[b]) ? 1 : Integer.compare(a, b));
			for (int r = 0; r < k; r++) {
				boolean real = r < order.length;
				scores[query * k + r] = real ? s[order[r]] : Float.NEGATIVE_INFINITY;
				slots[query * k + r] = real ? from + order[r] : KnnKernels.NO_ID;
			}
		}
		return new SearchRun.Result(scores, slots);
	}

	/** What one {@code knn_fused} launch writes: each range's top k per query, {@code (q * ranges + range) * k}. */
	static SearchRun.Result rangeLists(float[] vectors, int dim, float[] queries, int k, int rowsPerBlock) {
		int n = vectors.length / dim;
		int count = queries.length / dim;
		int ranges = DeviceSearch.ceilDiv(n, rowsPerBlock);
		float[] scores = new float[count * ranges * k];
		int[] slots = new int[count * ranges * k];
		for (int range = 0; range < ranges; range++) {
			SearchRun.Result part = topK(vectors, dim, queries, k, range * rowsPerBlock,
					Math.min(n, (range + 1) * rowsPerBlock));
			for (int q = 0; q < count; q++) {
				System.arraycopy(part.scores(), q * k, scores, (q * ranges + range) * k, k);
				System.arraycopy(part.slots(), q * k, slots, (q * ranges + range) * k, k);
			}
		}
		return new SearchRun.Result(scores, slots);
	}

	/** Gaussian rows of mixed magnitudes (so that a different order of operations would show). */
	static float[] rows(Random random, int count, int dim) {
		float[] rows = new float[count * dim];
		for (int i = 0; i < rows.length; i++) {
			rows[i] = (float) (random.nextGaussian() * Math.pow(10, random.nextInt(5) - 2));
		}
		return rows;
	}

	/**
	 * Stored rows with the hard cases spread over them: every 7th row a copy of an earlier one (equal
	 * scores: the lower row must win, however the rows fall into ranges and tiles), and, when
	 * {@code overflow}, every 97th row from row 3 on one whose score against {@link #queries} is NaN
	 * (lane 0 overflows to +inf, lane 1 to -inf, and the tree adds them; ranked as -inf), +inf or -inf,
	 * in turn. (An fma with a finite product and an infinite sum stays infinite, so NaN arises only in
	 * the tree.)
	 */
	static float[] storedRows(Random random, int n, int dim, boolean overflow) {
		float[] rows = rows(random, n, dim);
		for (int v = 7; v < n; v += 7) {
			int copy = random.nextInt(v);
			System.arraycopy(rows, copy * dim, rows, v * dim, dim);
		}
		if (overflow && dim > 1) {
			for (int v = 3; v < n; v += 97) {
				int kind = (v / 97) % 3;
				rows[v * dim] = (kind == 2) ? -3e38f : 3e38f;
				rows[v * dim + 1] = (kind == 1) ? 3e38f : -3e38f;
			}
		}
		return rows;
	}

	/** Queries whose dimensions 0 and 1 are at least 1.5, so that the overflow rows overflow. */
	static float[] queries(Random random, int count, int dim) {
		float[] queries = rows(random, count, dim);
		for (int q = 0; q < count; q++) {
			for (int j = 0; j < Math.min(2, dim); j++) {
				queries[q * dim + j] = 1.5f + random.nextFloat();
			}
		}
		return queries;
	}

}
