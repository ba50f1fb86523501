package dev.gpucompute.sample.search;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link TileScorer} with the Vector API ({@code jdk.incubator.vector}, which the JVM must be started
 * with: {@code --add-modules jdk.incubator.vector}). Only {@link KnnKernels} refers to this class, by
 * name, so that the service runs without the module (on the scalar path).
 *
 * <p>Same bits as {@link TileScorer.Scalar}: a 16-lane accumulator (one 512-bit vector, or two 256-bit
 * halves) holds the {@value KnnKernels#LANES} per-lane partial sums of one (query, vector) pair, updated
 * with lane-wise fma in dimension order; the lane tree of {@link KnnKernels#laneTree} is then done for
 * many pairs at once by a butterfly of blends, a lane swap and lane-wise adds, which performs exactly
 * the tree's additions (each IEEE addition is commutative, so operand order does not matter). Never
 * {@code reduceLanes}, whose order is unspecified. Register blocking: 4 queries x 4 vectors per
 * micro-kernel on 512-bit hardware, 2 x 2 on 256-bit hardware.
 *
 * <p>Stateless and thread-safe.
 */
final class SimdTileScorer {

	private SimdTileScorer() {
	}

	/** The path for this hardware, or null where vectors narrower than 256 bits would be used. */
	static TileScorer create() {
		int preferred = FloatVector.SPECIES_PREFERRED.length();
		if (preferred >= 16) {
			return new Wide();
		}
		if (preferred >= 8) {
			return new Narrow();
		}
		return null;
	}

	/** Lane of the butterfly's result that holds input {@code i}: {@code i}'s {@code bits} low bits reversed. */
	static int bitReversed(int i, int bits) {
		return Integer.reverse(i) >>> (32 - bits);
	}

	private static VectorMask<Float> offsetMask(VectorSpecies<Float> species, int offset) {
		boolean[] bits = new boolean[species.length()];
		for (int l = 0; l < bits.length; l++) {
			bits[l] = (l & offset) != 0;
		}
		return VectorMask.fromArray(species, bits, 0);
	}

	private static VectorShuffle<Float> swap(VectorSpecies<Float> species, int offset) {
		return VectorShuffle.fromOp(species, (l) -> l ^ offset);
	}

	/**
	 * One butterfly level: lanes without the {@code offset} bit get {@code x[l] + x[l + offset]}, lanes
	 * with it {@code y[l - offset] + y[l]}, so two inputs' partial sums are halved into one vector.
	 */
	private static FloatVector combine(FloatVector x, FloatVector y, VectorMask<Float> mask,
			VectorShuffle<Float> swap) {
		return x.blend(y, mask).add(y.blend(x, mask).rearrange(swap));
	}

	/** 512-bit vectors: one per pair, 4 x 4 pairs per micro-kernel. */
	static final class Wide implements TileScorer {

		private static final VectorSpecies<Float> S = FloatVector.SPECIES_512;

		private static final VectorMask<Float> M8 = offsetMask(S, 8);

		private static final VectorMask<Float> M4 = offsetMask(S, 4);

		private static final VectorMask<Float> M2 = offsetMask(S, 2);

		private static final VectorMask<Float> M1 = offsetMask(S, 1);

		private static final VectorShuffle<Float> X8 = swap(S, 8);

		private static final VectorShuffle<Float> X4 = swap(S, 4);

		private static final VectorShuffle<Float> X2 = swap(S, 2);

		private static final VectorShuffle<Float> X1 = swap(S, 1);

		@Override
		public void score(float[] queries, int qRows, float[] vectors, int vRows, int paddedDim, float[] out,
				float[] lanes) {
			for (int vi = 0; vi < vRows; vi += 4) {
				int qi = 0;
				for (; qi + 4 <= qRows; qi += 4) {
					block4x4(queries, qi, vectors, vi, paddedDim, out, lanes);
				}
				for (; qi < qRows; qi++) {
					block1x4(queries, qi, vectors, vi, paddedDim, out, lanes);
				}
			}
		}

		private static void block4x4(float[] q, int qi, float[] v, int vi, int dim, float[] out, float[] lanes) {
			int q0 = qi * dim;
			int q1 = q0 + dim;
			int q2 = q1 + dim;
			int q3 = q2 + dim;
			int v0 = vi * dim;
			int v1 = v0 + dim;
			int v2 = v1 + dim;
			int v3 = v2 + dim;
			FloatVector c00 = FloatVector.zero(S), c01 = c00, c02 = c00, c03 = c00;
			FloatVector c10 = c00, c11 = c00, c12 = c00, c13 = c00;
			FloatVector c20 = c00, c21 = c00, c22 = c00, c23 = c00;
			FloatVector c30 = c00, c31 = c00, c32 = c00, c33 = c00;
			for (int j = 0; j < dim; j += 16) {
				FloatVector x0 = FloatVector.fromArray(S, v, v0 + j);
				FloatVector x1 = FloatVector.fromArray(S, v, v1 + j);
				FloatVector x2 = FloatVector.fromArray(S, v, v2 + j);
				FloatVector x3 = FloatVector.fromArray(S, v, v3 + j);
				FloatVector y = FloatVector.fromArray(S, q, q0 + j);
				c00 = y.fma(x0, c00);
				c01 = y.fma(x1, c01);
				c02 = y.fma(x2, c02);
				c03 = y.fma(x3, c03);
				y = FloatVector.fromArray(S, q, q1 + j);
				c10 = y.fma(x0, c10);
				c11 = y.fma(x1, c11);
				c12 = y.fma(x2, c12);
				c13 = y.fma(x3, c13);
				y = FloatVector.fromArray(S, q, q2 + j);
				c20 = y.fma(x0, c20);
				c21 = y.fma(x1, c21);
				c22 = y.fma(x2, c22);
				c23 = y.fma(x3, c23);
				y = FloatVector.fromArray(S, q, q3 + j);
				c30 = y.fma(x0, c30);
				c31 = y.fma(x1, c31);
				c32 = y.fma(x2, c32);
				c33 = y.fma(x3, c33);
			}
			// Inputs in order i = 4 * query + vector; input i ends in lane bitReversed(i, 4).
			FloatVector a0 = combine(c00, c01, M8, X8);
			FloatVector a1 = combine(c02, c03, M8, X8);
			FloatVector a2 = combine(c10, c11, M8, X8);
			FloatVector a3 = combine(c12, c13, M8, X8);
			FloatVector a4 = combine(c20, c21, M8, X8);
			FloatVector a5 = combine(c22, c23, M8, X8);
			FloatVector a6 = combine(c30, c31, M8, X8);
			FloatVector a7 = combine(c32, c33, M8, X8);
			FloatVector b0 = combine(a0, a1, M4, X4);
			FloatVector b1 = combine(a2, a3, M4, X4);
			FloatVector b2 = combine(a4, a5, M4, X4);
			FloatVector b3 = combine(a6, a7, M4, X4);
			FloatVector d0 = combine(b0, b1, M2, X2);
			FloatVector d1 = combine(b2, b3, M2, X2);
			combine(d0, d1, M1, X1).intoArray(lanes, 0);
			for (int i = 0; i < 16; i++) {
				out[(qi + (i >> 2)) * KnnKernels.TILE_V + vi + (i & 3)] = lanes[bitReversed(i, 4)];
			}
		}

		private static void block1x4(float[] q, int qi, float[] v, int vi, int dim, float[] out, float[] lanes) {
			int q0 = qi * dim;
			int v0 = vi * dim;
			int v1 = v0 + dim;
			int v2 = v1 + dim;
			int v3 = v2 + dim;
			FloatVector c0 = FloatVector.zero(S), c1 = c0, c2 = c0, c3 = c0;
			for (int j = 0; j < dim; j += 16) {
				FloatVector y = FloatVector.fromArray(S, q, q0 + j);
				c0 = y.fma(FloatVector.fromArray(S, v, v0 + j), c0);
				c1 = y.fma(FloatVector.fromArray(S, v, v1 + j), c1);
				c2 = y.fma(FloatVector.fromArray(S, v, v2 + j), c2);
				c3 = y.fma(FloatVector.fromArray(S, v, v3 + j), c3);
			}
			FloatVector b = combine(combine(c0, c1, M8, X8), combine(c2, c3, M8, X8), M4, X4);
			// One input left per level: combining it with itself finishes its tree (the lanes repeat).
			FloatVector d = combine(b, b, M2, X2);
			combine(d, d, M1, X1).intoArray(lanes, 0);
			int row = qi * KnnKernels.TILE_V + vi;
			for (int i = 0; i < 4; i++) {
				out[row + i] = lanes[bitReversed(i, 4)];
			}
		}

		@Override
		public String description() {
			return "Vector API, 512-bit (16 float lanes)";
		}

	}

	/**
	 * 256-bit vectors: a pair's 16 lanes are two halves, the tree's first level ({@code +8}) adds them,
	 * the rest is an 8-lane butterfly. 2 x 2 pairs per micro-kernel (16 registers on AVX2).
	 */
	static final class Narrow implements TileScorer {

		private static final VectorSpecies<Float> S = FloatVector.SPECIES_256;

		private static final VectorMask<Float> M4 = offsetMask(S, 4);

		private static final VectorMask<Float> M2 = offsetMask(S, 2);

		private static final VectorMask<Float> M1 = offsetMask(S, 1);

		private static final VectorShuffle<Float> X4 = swap(S, 4);

		private static final VectorShuffle<Float> X2 = swap(S, 2);

		private static final VectorShuffle<Float> X1 = swap(S, 1);

		@Override
		public void score(float[] queries, int qRows, float[] vectors, int vRows, int paddedDim, float[] out,
				float[] lanes) {
			for (int vi = 0; vi < vRows; vi += 2) {
				int qi = 0;
				for (; qi + 2 <= qRows; qi += 2) {
					block2x2(queries, qi, vectors, vi, paddedDim, out, lanes);
				}
				if (qi < qRows) {
					block1x2(queries, qi, vectors, vi, paddedDim, out, lanes);
				}
			}
		}

		private static void block2x2(float[] q, int qi, float[] v, int vi, int dim, float[] out, float[] lanes) {
			int q0 = qi * dim;
			int q1 = q0 + dim;
			int v0 = vi * dim;
			int v1 = v0 + dim;
			FloatVector l00 = FloatVector.zero(S), h00 = l00, l01 = l00, h01 = l00;
			FloatVector l10 = l00, h10 = l00, l11 = l00, h11 = l00;
			for (int j = 0; j < dim; j += 16) {
				FloatVector x0l = FloatVector.fromArray(S, v, v0 + j);
				FloatVector x0h = FloatVector.fromArray(S, v, v0 + j + 8);
				FloatVector x1l = FloatVector.fromArray(S, v, v1 + j);
				FloatVector x1h = FloatVector.fromArray(S, v, v1 + j + 8);
				FloatVector yl = FloatVector.fromArray(S, q, q0 + j);
				FloatVector yh = FloatVector.fromArray(S, q, q0 + j + 8);
				l00 = yl.fma(x0l, l00);
				h00 = yh.fma(x0h, h00);
				l01 = yl.fma(x1l, l01);
				h01 = yh.fma(x1h, h01);
				yl = FloatVector.fromArray(S, q, q1 + j);
				yh = FloatVector.fromArray(S, q, q1 + j + 8);
				l10 = yl.fma(x0l, l10);
				h10 = yh.fma(x0h, h10);
				l11 = yl.fma(x1l, l11);
				h11 = yh.fma(x1h, h11);
			}
			// Inputs i = 2 * query + vector; after the +8 level, input i ends in lane bitReversed(i, 3).
			FloatVector a = combine(l00.add(h00), l01.add(h01), M4, X4);
			FloatVector b = combine(l10.add(h10), l11.add(h11), M4, X4);
			FloatVector d = combine(a, b, M2, X2);
			combine(d, d, M1, X1).intoArray(lanes, 0);
			for (int i = 0; i < 4; i++) {
				out[(qi + (i >> 1)) * KnnKernels.TILE_V + vi + (i & 1)] = lanes[bitReversed(i, 3)];
			}
		}

		private static void block1x2(float[] q, int qi, float[] v, int vi, int dim, float[] out, float[] lanes) {
			int q0 = qi * dim;
			int v0 = vi * dim;
			int v1 = v0 + dim;
			FloatVector l0 = FloatVector.zero(S), h0 = l0, l1 = l0, h1 = l0;
			for (int j = 0; j < dim; j += 16) {
				FloatVector yl = FloatVector.fromArray(S, q, q0 + j);
				FloatVector yh = FloatVector.fromArray(S, q, q0 + j + 8);
				l0 = yl.fma(FloatVector.fromArray(S, v, v0 + j), l0);
				h0 = yh.fma(FloatVector.fromArray(S, v, v0 + j + 8), h0);
				l1 = yl.fma(FloatVector.fromArray(S, v, v1 + j), l1);
				h1 = yh.fma(FloatVector.fromArray(S, v, v1 + j + 8), h1);
			}
			FloatVector a = combine(l0.add(h0), l1.add(h1), M4, X4);
			FloatVector d = combine(a, a, M2, X2);
			combine(d, d, M1, X1).intoArray(lanes, 0);
			int row = qi * KnnKernels.TILE_V + vi;
			for (int i = 0; i < 2; i++) {
				out[row + i] = lanes[bitReversed(i, 3)];
			}
		}

		@Override
		public String description() {
			return "Vector API, 256-bit (16 logical lanes as two 8-float halves)";
		}

	}

}
