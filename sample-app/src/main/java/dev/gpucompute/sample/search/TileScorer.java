package dev.gpucompute.sample.search;

/**
 * The arithmetic of {@code knn_score} on the CPU: the scores of a tile of queries against a tile of
 * stored vectors, both copied into heap arrays. Every score is the one defined in {@link KnnKernels}
 * (per-lane partial sums over {@value KnnGeometry#LANES} logical lanes, then a fixed tree), so every
 * implementation gives the same bits.
 *
 * <p>Implementations are stateless and thread-safe; the caller owns every array it passes.
 */
interface TileScorer {

	/**
	 * Writes {@code out[qi * KnnGeometry.TILE_V + vi]} for {@code qi < qRows}, {@code vi < vRows}.
	 * @param queries {@code qRows} rows of {@code paddedDim} floats, zero past the real dimension
	 * @param qRows the query rows, at most {@link KnnGeometry#TILE_Q}
	 * @param vectors at least {@code vRows} rows of {@code paddedDim} floats, zero past the real dimension
	 * @param vRows the vector rows to score, a multiple of 4 (padding rows are zero), at most
	 * {@link KnnGeometry#TILE_V}
	 * @param paddedDim the row length, a multiple of {@link KnnGeometry#LANES}
	 * @param out the scores, {@code TILE_Q * TILE_V} floats
	 * @param lanes scratch of {@link KnnGeometry#LANES} floats
	 */
	void score(float[] queries, int qRows, float[] vectors, int vRows, int paddedDim, float[] out, float[] lanes);

	/** A line for the start-up log: which path this is. */
	String description();

	/**
	 * The fixed tree that adds a score's {@value KnnGeometry#LANES} partial sums: {@code p[l] += p[l + off]}
	 * for {@code l < off}, {@code off} = 8, 4, 2, 1 (the order of {@code __shfl_down_sync} with width 16).
	 * Modifies {@code p}; returns {@code p[0]}.
	 */
	static float laneTree(float[] p) {
		for (int offset = KnnGeometry.LANES / 2; offset > 0; offset >>= 1) {
			for (int l = 0; l < offset; l++) {
				p[l] += p[l + offset];
			}
		}
		return p[0];
	}

	/** The plain-Java path: the same arithmetic with {@link Math#fma(float, float, float)}. */
	final class Scalar implements TileScorer {

		@Override
		public void score(float[] queries, int qRows, float[] vectors, int vRows, int paddedDim, float[] out,
				float[] lanes) {
			for (int vi = 0; vi < vRows; vi++) {
				int va = vi * paddedDim;
				for (int qi = 0; qi < qRows; qi++) {
					int qa = qi * paddedDim;
					java.util.Arrays.fill(lanes, 0f);
					for (int j = 0; j < paddedDim; j += KnnGeometry.LANES) {
						for (int l = 0; l < KnnGeometry.LANES; l++) {
							lanes[l] = Math.fma(queries[qa + j + l], vectors[va + j + l], lanes[l]);
						}
					}
					out[qi * KnnGeometry.TILE_V + vi] = TileScorer.laneTree(lanes);
				}
			}
		}

		@Override
		public String description() {
			return "scalar Java (Math.fma)";
		}

	}

}
