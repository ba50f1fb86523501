package dev.gpucompute.expression;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Inputs that find where two implementations of IEEE arithmetic part: every pair of special values
 * (signed zeros, subnormals, the smallest normal, infinities, NaN of both signs, ties for rounding,
 * the limits of int and long conversion, values at 2^24 where a float stops holding every integer),
 * values near cancellation, and random bit patterns (any exponent, NaN payloads).
 */
final class Adversarial {

	static final float[] FLOATS = { 0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE, 0x1p-127f, 0x0.fffffep-126f,
			Float.MIN_NORMAL, -Float.MIN_NORMAL, 1f, -1f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 3f, 0x1p24f, 0x1.000002p24f,
			Float.MAX_VALUE, -Float.MAX_VALUE, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN,
			Float.intBitsToFloat(0xffc00001), 1e-30f, 0x1p31f, -0x1p31f, 0x1.000002p31f, 0x1p63f, -0x1p63f, 1e20f, 0.1f,
			3.14159265f, -7.25f };

	static final double[] DOUBLES = { 0d, -0d, Double.MIN_VALUE, -Double.MIN_VALUE, 0x1p-1030, 0x0.fffffffffffffp-1022,
			Double.MIN_NORMAL, -Double.MIN_NORMAL, 1d, -1d, 0.5d, -0.5d, 1.5d, 2.5d, -2.5d, 3d, 0x1p53, 0x1.0000000000001p53,
			Double.MAX_VALUE, -Double.MAX_VALUE, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NaN,
			Double.longBitsToDouble(0xfff8000000000001L), 1e-300, 0x1p31, -0x1p31 - 1, 0x1p63, -0x1p63, 0x1.0000000000001p63,
			1e20, 0.1d, Math.PI, -7.25d, 0.49999999999999994d };

	static final int[] INTS = { 0, 1, -1, 2, -2, 3, 7, -7, 31, 32, 33, 63, 64, 65, -31, -32, Integer.MIN_VALUE,
			Integer.MAX_VALUE, Integer.MIN_VALUE + 1, Integer.MAX_VALUE - 1, 1000, -1000, 0x55555555, 0xaaaaaaaa, 16777217 };

	static final long[] LONGS = { 0L, 1L, -1L, 2L, -2L, 3L, 7L, -7L, 31L, 32L, 63L, 64L, 65L, -63L, -64L,
			Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE - 1, Integer.MIN_VALUE, Integer.MAX_VALUE,
			0x100000000L, 0x5555555555555555L, 0xaaaaaaaaaaaaaaaaL, (1L << 53) + 1 };

	private Adversarial() {
	}

	/** Three float inputs of the same length: every pair of specials (the third random), then hard random cases. */
	static List<float[]> floats(int random, long seed) {
		SplittableRandom rng = new SplittableRandom(seed);
		int pairs = FLOATS.length * FLOATS.length;
		int n = pairs + random;
		float[] x = new float[n];
		float[] y = new float[n];
		float[] z = new float[n];
		for (int k = 0; k < pairs; k++) {
			x[k] = FLOATS[k / FLOATS.length];
			y[k] = FLOATS[k % FLOATS.length];
			z[k] = FLOATS[rng.nextInt(FLOATS.length)];
		}
		for (int k = pairs; k < n; k++) {
			switch (k % 4) {
				case 0 -> { // any bit pattern: every exponent, subnormals, NaN payloads
					x[k] = Float.intBitsToFloat(rng.nextInt());
					y[k] = Float.intBitsToFloat(rng.nextInt());
					z[k] = Float.intBitsToFloat(rng.nextInt());
				}
				case 1 -> { // ordinary magnitudes
					x[k] = (float) (rng.nextDouble(-100, 100));
					y[k] = (float) (rng.nextDouble(-100, 100));
					z[k] = (float) (rng.nextDouble(-100, 100));
				}
				case 2 -> { // near cancellation: x + y and x * y + z lose most of their bits
					x[k] = (float) rng.nextDouble(-4, 4);
					y[k] = Math.nextAfter(-x[k], rng.nextBoolean() ? 1.0 : -1.0);
					z[k] = -x[k] * y[k];
				}
				default -> { // small values and their neighbours, near underflow
					x[k] = (float) (rng.nextDouble(-1, 1) * 0x1p-120);
					y[k] = (float) (rng.nextDouble(-1, 1) * 0x1p-10);
					z[k] = Float.intBitsToFloat(rng.nextInt(0x00ffffff));
				}
			}
		}
		return List.of(x, y, z);
	}

	static List<double[]> doubles(int random, long seed) {
		SplittableRandom rng = new SplittableRandom(seed);
		int pairs = DOUBLES.length * DOUBLES.length;
		int n = pairs + random;
		double[] x = new double[n];
		double[] y = new double[n];
		double[] z = new double[n];
		for (int k = 0; k < pairs; k++) {
			x[k] = DOUBLES[k / DOUBLES.length];
			y[k] = DOUBLES[k % DOUBLES.length];
			z[k] = DOUBLES[rng.nextInt(DOUBLES.length)];
		}
		for (int k = pairs; k < n; k++) {
			switch (k % 4) {
				case 0 -> {
					x[k] = Double.longBitsToDouble(rng.nextLong());
					y[k] = Double.longBitsToDouble(rng.nextLong());
					z[k] = Double.longBitsToDouble(rng.nextLong());
				}
				case 1 -> {
					x[k] = rng.nextDouble(-100, 100);
					y[k] = rng.nextDouble(-100, 100);
					z[k] = rng.nextDouble(-100, 100);
				}
				case 2 -> {
					x[k] = rng.nextDouble(-4, 4);
					y[k] = Math.nextAfter(-x[k], rng.nextBoolean() ? 1.0 : -1.0);
					z[k] = -x[k] * y[k];
				}
				default -> {
					x[k] = rng.nextDouble(-1, 1) * 0x1p-1010;
					y[k] = rng.nextDouble(-1, 1) * 0x1p-10;
					z[k] = Double.longBitsToDouble(rng.nextLong(0x001fffffffffffffL));
				}
			}
		}
		return List.of(x, y, z);
	}

	static List<int[]> ints(int random, long seed) {
		SplittableRandom rng = new SplittableRandom(seed);
		int pairs = INTS.length * INTS.length;
		int n = pairs + random;
		int[] a = new int[n];
		int[] b = new int[n];
		for (int k = 0; k < pairs; k++) {
			a[k] = INTS[k / INTS.length];
			b[k] = INTS[k % INTS.length];
		}
		for (int k = pairs; k < n; k++) {
			a[k] = (k % 2 == 0) ? rng.nextInt() : rng.nextInt(-100, 100);
			b[k] = (k % 3 == 0) ? rng.nextInt() : rng.nextInt(-70, 70);
		}
		return List.of(a, b);
	}

	static List<long[]> longs(int random, long seed) {
		SplittableRandom rng = new SplittableRandom(seed);
		int pairs = LONGS.length * LONGS.length;
		int n = pairs + random;
		long[] a = new long[n];
		long[] b = new long[n];
		for (int k = 0; k < pairs; k++) {
			a[k] = LONGS[k / LONGS.length];
			b[k] = LONGS[k % LONGS.length];
		}
		for (int k = pairs; k < n; k++) {
			a[k] = (k % 2 == 0) ? rng.nextLong() : rng.nextLong(-100, 100);
			b[k] = (k % 3 == 0) ? rng.nextLong() : rng.nextLong(-130, 130);
		}
		return List.of(a, b);
	}

	/** {@code values} repeated (or cut) to {@code n} elements. */
	static List<Object> fit(int n, List<?> arrays) {
		List<Object> fitted = new ArrayList<>();
		for (Object array : arrays) {
			int length = java.lang.reflect.Array.getLength(array);
			Object copy = java.lang.reflect.Array.newInstance(array.getClass().getComponentType(), n);
			for (int k = 0; k < n; k++) {
				java.lang.reflect.Array.set(copy, k, java.lang.reflect.Array.get(array, k % length));
			}
			fitted.add(copy);
		}
		return fitted;
	}

}
