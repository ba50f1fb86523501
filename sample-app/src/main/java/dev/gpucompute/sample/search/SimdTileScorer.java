package dev.gpucompute.sample.search;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;
import org.jspecify.annotations.Nullable;

/**
 * {@link TileScorer} with the Vector API ({@code jdk.incubator.vector}, which the JVM must be started
 * with: {@code --add-modules jdk.incubator.vector}). Only {@link CpuScoring} refers to this class, by
 * name, so that the service runs without the module (on the scalar path).
 *
 * <p>Same bits as {@link TileScorer.Scalar}: a 16-lane accumulator (one 512-bit vector, or two 256-bit
 * halves) holds the {@value KnnGeometry#LANES} per-lane partial sums of one (query, vector) pair, updated
 * with lane-wise fma in dimension order; the lane tree of {@link TileScorer#laneTree} is then done for
 * several pairs at once by a butterfly of blends, a lane swap and lane-wise adds, which performs
 * exactly the tree's additions (each IEEE addition is commutative, so operand order does not matter).
 * One butterfly level with offset {@code o} turns two inputs x, y into one vector whose lanes without
 * the {@code o} bit hold {@code x[l] + x[l + o]} and whose lanes with it hold {@code y[l - o] + y[l]};
 * after the last level, input {@code i} ends in lane {@link #bitReversed bitReversed(i)}. Never
 * {@code reduceLanes}, whose order is unspecified. Register blocking: 4 queries x 4 vectors per
 * micro-kernel on 512-bit hardware, 2 x 2 on 256-bit hardware.
 *
 * <p>Code shape matters for speed, not for the bits: vectors never cross a method boundary (a method
 * C2 does not inline would box them and run the Vector API's plain-Java fallback, several times
 * slower), and no method holds so much Vector API code that C2's inlining budget runs out.
 *
 * <p>Thread-safe: the only state is per-thread accumulator arrays.
 */
final class SimdTileScorer {

	private SimdTileScorer() {
	}

	/** The path for this hardware, or null where vectors narrower than 256 bits would be used. */
	static @Nullable TileScorer create() {
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
	 * 512-bit vectors: one per pair. The main micro-kernel accumulates 4 queries x 4 vectors and stores
	 * the accumulators; the lane trees then run over 16 pairs at a time (4 for a tile's last vectors
	 * where fewer than 16 remain) in separate methods (in one
	 * method, C2's inlining budget runs out and the Vector API calls fall back to plain Java, about 5x
	 * slower). Leftover queries (fewer than 4, a single query in particular) use a 1 x 4 micro-kernel
	 * that finishes its trees in place, which measured faster for them.
	 */
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

		private static final ThreadLocal<float[]> ACCUMULATORS = ThreadLocal
			.withInitial(() -> new float[KnnGeometry.TILE_Q * KnnGeometry.TILE_V * 16]);

		@Override
		public void score(float[] queries, int qRows, float[] vectors, int vRows, int paddedDim, float[] out,
				float[] lanes) {
			// acc[(qi * TILE_V + vi) * 16 + l]: lane l of pair (qi, vi).
			float[] acc = ACCUMULATORS.get();
			for (int vi = 0; vi < vRows; vi += 4) {
				int qi = 0;
				for (; qi + 4 <= qRows; qi += 4) {
					block4x4(queries, qi, vectors, vi, paddedDim, acc);
				}
				for (; qi < qRows; qi++) {
					block1x4(queries, qi, vectors, vi, paddedDim, out, lanes);
				}
			}
			for (int qi = 0; qi < (qRows & ~3); qi++) {
				int vi = 0;
				for (; vi + 16 <= vRows; vi += 16) {
					reduce16(acc, qi * KnnGeometry.TILE_V + vi, out);
				}
				for (; vi < vRows; vi += 4) {
					reduce4(acc, qi * KnnGeometry.TILE_V + vi, out, lanes);
				}
			}
		}

		private static void block4x4(float[] q, int qi, float[] v, int vi, int dim, float[] acc) {
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
			int a = (qi * KnnGeometry.TILE_V + vi) * 16;
			int row = KnnGeometry.TILE_V * 16;
			c00.intoArray(acc, a);
			c01.intoArray(acc, a + 16);
			c02.intoArray(acc, a + 32);
			c03.intoArray(acc, a + 48);
			a += row;
			c10.intoArray(acc, a);
			c11.intoArray(acc, a + 16);
			c12.intoArray(acc, a + 32);
			c13.intoArray(acc, a + 48);
			a += row;
			c20.intoArray(acc, a);
			c21.intoArray(acc, a + 16);
			c22.intoArray(acc, a + 32);
			c23.intoArray(acc, a + 48);
			a += row;
			c30.intoArray(acc, a);
			c31.intoArray(acc, a + 16);
			c32.intoArray(acc, a + 32);
			c33.intoArray(acc, a + 48);
		}

		/** One query x 4 vectors, with the lane trees done at once (small enough for C2 to inline it all). */
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
			// The butterfly written out here, not in a helper taking vectors: a helper C2 does not inline
			// would box its arguments and run the Vector API's plain-Java fallback.
			FloatVector a0 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			FloatVector a1 = c2.blend(c3, M8).add(c3.blend(c2, M8).rearrange(X8));
			FloatVector b = a0.blend(a1, M4).add(a1.blend(a0, M4).rearrange(X4));
			// One input left per level: combining it with itself finishes its tree (the lanes repeat).
			FloatVector d = b.add(b.rearrange(X2));
			d.add(d.rearrange(X1)).intoArray(lanes, 0);
			// Input i ends in lane bitReversed(i, 4): 0, 8, 4, 12.
			int p = qi * KnnGeometry.TILE_V + vi;
			out[p] = lanes[0];
			out[p + 1] = lanes[8];
			out[p + 2] = lanes[4];
			out[p + 3] = lanes[12];
		}

		/**
		 * The lane trees of the 16 pairs {@code p .. p + 15} (one query, 16 consecutive vectors), stored by
		 * {@link #block4x4}: the full four-level butterfly, 16 vectors in, one out. Each level halves the
		 * vectors, so the 16 trees cost 60 lane-wise operations and one store, against about 16 per 4
		 * pairs plus scalar copies when 4 pairs are reduced at a time. Pair {@code p + r} is fed as input
		 * {@code bitReversed(r, 4)} (the reversal is its own inverse), so it ends in lane {@code r} and the
		 * result is stored as it is. Too large for C2 to inline into {@link #score}, which is what keeps it
		 * out of the caller's inlining budget; it takes and returns no vectors.
		 */
		private static void reduce16(float[] acc, int p, float[] out) {
			int a = p * 16;
			// Level +8: inputs (2i, 2i + 1) are pairs (rev(2i), rev(2i + 1)) = (r, r + 8) for r = rev(2i).
			FloatVector c0 = FloatVector.fromArray(S, acc, a);
			FloatVector c1 = FloatVector.fromArray(S, acc, a + 8 * 16);
			FloatVector a0 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			c0 = FloatVector.fromArray(S, acc, a + 4 * 16);
			c1 = FloatVector.fromArray(S, acc, a + 12 * 16);
			FloatVector a1 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			c0 = FloatVector.fromArray(S, acc, a + 2 * 16);
			c1 = FloatVector.fromArray(S, acc, a + 10 * 16);
			FloatVector a2 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			c0 = FloatVector.fromArray(S, acc, a + 6 * 16);
			c1 = FloatVector.fromArray(S, acc, a + 14 * 16);
			FloatVector a3 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			c0 = FloatVector.fromArray(S, acc, a + 16);
			c1 = FloatVector.fromArray(S, acc, a + 9 * 16);
			FloatVector a4 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			c0 = FloatVector.fromArray(S, acc, a + 5 * 16);
			c1 = FloatVector.fromArray(S, acc, a + 13 * 16);
			FloatVector a5 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			c0 = FloatVector.fromArray(S, acc, a + 3 * 16);
			c1 = FloatVector.fromArray(S, acc, a + 11 * 16);
			FloatVector a6 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			c0 = FloatVector.fromArray(S, acc, a + 7 * 16);
			c1 = FloatVector.fromArray(S, acc, a + 15 * 16);
			FloatVector a7 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			// Levels +4, +2, +1 on the halves, quarters and eighths.
			FloatVector b0 = a0.blend(a1, M4).add(a1.blend(a0, M4).rearrange(X4));
			FloatVector b1 = a2.blend(a3, M4).add(a3.blend(a2, M4).rearrange(X4));
			FloatVector b2 = a4.blend(a5, M4).add(a5.blend(a4, M4).rearrange(X4));
			FloatVector b3 = a6.blend(a7, M4).add(a7.blend(a6, M4).rearrange(X4));
			FloatVector d0 = b0.blend(b1, M2).add(b1.blend(b0, M2).rearrange(X2));
			FloatVector d1 = b2.blend(b3, M2).add(b3.blend(b2, M2).rearrange(X2));
			d0.blend(d1, M1).add(d1.blend(d0, M1).rearrange(X1)).intoArray(out, p);
		}

		/** The lane trees of pairs {@code p .. p + 3}, stored by {@link #block4x4}; as in {@link #block1x4}. */
		private static void reduce4(float[] acc, int p, float[] out, float[] lanes) {
			int a = p * 16;
			FloatVector c0 = FloatVector.fromArray(S, acc, a);
			FloatVector c1 = FloatVector.fromArray(S, acc, a + 16);
			FloatVector c2 = FloatVector.fromArray(S, acc, a + 32);
			FloatVector c3 = FloatVector.fromArray(S, acc, a + 48);
			FloatVector a0 = c0.blend(c1, M8).add(c1.blend(c0, M8).rearrange(X8));
			FloatVector a1 = c2.blend(c3, M8).add(c3.blend(c2, M8).rearrange(X8));
			FloatVector b = a0.blend(a1, M4).add(a1.blend(a0, M4).rearrange(X4));
			FloatVector d = b.add(b.rearrange(X2));
			d.add(d.rearrange(X1)).intoArray(lanes, 0);
			out[p] = lanes[0];
			out[p + 1] = lanes[8];
			out[p + 2] = lanes[4];
			out[p + 3] = lanes[12];
		}

		@Override
		public String description() {
			return "Vector API, 512-bit (16 float lanes)";
		}

	}

	/**
	 * 256-bit vectors: a pair's 16 lanes are two halves, and the tree's first level ({@code +8}) adds
	 * them in the micro-kernel (2 x 2 pairs, 16 registers on AVX2); the rest is an 8-lane butterfly
	 * over 4 pairs at a time in a separate method.
	 */
	static final class Narrow implements TileScorer {

		private static final VectorSpecies<Float> S = FloatVector.SPECIES_256;

		private static final VectorMask<Float> M4 = offsetMask(S, 4);

		private static final VectorMask<Float> M2 = offsetMask(S, 2);

		private static final VectorMask<Float> M1 = offsetMask(S, 1);

		private static final VectorShuffle<Float> X4 = swap(S, 4);

		private static final VectorShuffle<Float> X2 = swap(S, 2);

		private static final VectorShuffle<Float> X1 = swap(S, 1);

		private static final ThreadLocal<float[]> ACCUMULATORS = ThreadLocal
			.withInitial(() -> new float[KnnGeometry.TILE_Q * KnnGeometry.TILE_V * 8]);

		@Override
		public void score(float[] queries, int qRows, float[] vectors, int vRows, int paddedDim, float[] out,
				float[] lanes) {
			// acc[(qi * TILE_V + vi) * 8 + l]: lane l of pair (qi, vi) after the +8 level.
			float[] acc = ACCUMULATORS.get();
			for (int vi = 0; vi < vRows; vi += 2) {
				int qi = 0;
				for (; qi + 2 <= qRows; qi += 2) {
					block2x2(queries, qi, vectors, vi, paddedDim, acc);
				}
				if (qi < qRows) {
					block1x2(queries, qi, vectors, vi, paddedDim, acc);
				}
			}
			for (int qi = 0; qi < qRows; qi++) {
				for (int vi = 0; vi < vRows; vi += 4) {
					reduce4(acc, qi * KnnGeometry.TILE_V + vi, out, lanes);
				}
			}
		}

		private static void block2x2(float[] q, int qi, float[] v, int vi, int dim, float[] acc) {
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
			int a = (qi * KnnGeometry.TILE_V + vi) * 8;
			l00.add(h00).intoArray(acc, a);
			l01.add(h01).intoArray(acc, a + 8);
			a += KnnGeometry.TILE_V * 8;
			l10.add(h10).intoArray(acc, a);
			l11.add(h11).intoArray(acc, a + 8);
		}

		private static void block1x2(float[] q, int qi, float[] v, int vi, int dim, float[] acc) {
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
			int a = (qi * KnnGeometry.TILE_V + vi) * 8;
			l0.add(h0).intoArray(acc, a);
			l1.add(h1).intoArray(acc, a + 8);
		}

		/**
		 * The rest of the lane trees of pairs {@code p .. p + 3}, written out (no helper taking vectors,
		 * see {@link Wide#block1x4}); input i ends in lane bitReversed(i, 3): 0, 4, 2, 6.
		 */
		private static void reduce4(float[] acc, int p, float[] out, float[] lanes) {
			int a = p * 8;
			FloatVector s0 = FloatVector.fromArray(S, acc, a);
			FloatVector s1 = FloatVector.fromArray(S, acc, a + 8);
			FloatVector s2 = FloatVector.fromArray(S, acc, a + 16);
			FloatVector s3 = FloatVector.fromArray(S, acc, a + 24);
			FloatVector a0 = s0.blend(s1, M4).add(s1.blend(s0, M4).rearrange(X4));
			FloatVector a1 = s2.blend(s3, M4).add(s3.blend(s2, M4).rearrange(X4));
			FloatVector d = a0.blend(a1, M2).add(a1.blend(a0, M2).rearrange(X2));
			d.add(d.rearrange(X1)).intoArray(lanes, 0);
			out[p] = lanes[0];
			out[p + 1] = lanes[4];
			out[p + 2] = lanes[2];
			out[p + 3] = lanes[6];
		}

		@Override
		public String description() {
			return "Vector API, 256-bit (16 logical lanes as two 8-float halves)";
		}

	}

}
