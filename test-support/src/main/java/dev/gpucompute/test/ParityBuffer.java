package dev.gpucompute.test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.SplittableRandom;

import dev.gpucompute.ElementType;

/**
 * A buffer argument of a {@link KernelParity} check: its element type, its size, what it holds before
 * the launch (given values, values generated from the check's seed, or zeros) and whether it is
 * compared after the launch. Both sides of a check get the same bytes. Immutable.
 */
public final class ParityBuffer {

	/** Makes a buffer's initial contents, in native byte order, from the check's random source. */
	@FunctionalInterface
	private interface Contents {

		void fill(ByteBuffer target, SplittableRandom random);

	}

	private final ElementType type;

	private final int count;

	private final Contents contents;

	private final boolean compared;

	private final String description;

	private ParityBuffer(ElementType type, int count, Contents contents, boolean compared, String description) {
		if (count < 0) {
			throw new IllegalArgumentException("A buffer holds 0 or more elements, got " + count);
		}
		this.type = type;
		this.count = count;
		this.contents = contents;
		this.compared = compared;
		this.description = description;
	}

	/** An input holding {@code values} (copied now), not compared. */
	public static ParityBuffer of(float[] values) {
		float[] copy = values.clone();
		return new ParityBuffer(ElementType.FLOAT, copy.length, (target, random) -> target.asFloatBuffer().put(copy), false,
				"float[" + copy.length + "]");
	}

	/** An input holding {@code values} (copied now), not compared. */
	public static ParityBuffer of(double[] values) {
		double[] copy = values.clone();
		return new ParityBuffer(ElementType.DOUBLE, copy.length, (target, random) -> target.asDoubleBuffer().put(copy), false,
				"double[" + copy.length + "]");
	}

	/** An input holding {@code values} (copied now), not compared. */
	public static ParityBuffer of(int[] values) {
		int[] copy = values.clone();
		return new ParityBuffer(ElementType.INT, copy.length, (target, random) -> target.asIntBuffer().put(copy), false,
				"int[" + copy.length + "]");
	}

	/** An input holding {@code values} (copied now), not compared. */
	public static ParityBuffer of(long[] values) {
		long[] copy = values.clone();
		return new ParityBuffer(ElementType.LONG, copy.length, (target, random) -> target.asLongBuffer().put(copy), false,
				"long[" + copy.length + "]");
	}

	/** An input of {@code count} floats drawn uniformly between -1 and 1. */
	public static ParityBuffer randomFloats(int count) {
		return randomFloats(count, -1f, 1f);
	}

	/** An input of {@code count} floats drawn uniformly between {@code min} and {@code max}. */
	public static ParityBuffer randomFloats(int count, float min, float max) {
		checkRange(min < max, min, max);
		return new ParityBuffer(ElementType.FLOAT, count, (target, random) -> {
			for (int i = 0; i < count; i++) {
				target.putFloat(4 * i, (float) (min + (max - (double) min) * random.nextDouble()));
			}
		}, false, count + " random floats in [" + min + ", " + max + ")");
	}

	/** An input of {@code count} doubles drawn uniformly from [min, max). */
	public static ParityBuffer randomDoubles(int count, double min, double max) {
		checkRange(min < max, min, max);
		return new ParityBuffer(ElementType.DOUBLE, count, (target, random) -> {
			for (int i = 0; i < count; i++) {
				target.putDouble(8 * i, random.nextDouble(min, max));
			}
		}, false, count + " random doubles in [" + min + ", " + max + ")");
	}

	/** An input of {@code count} ints drawn uniformly from [min, maxExclusive). */
	public static ParityBuffer randomInts(int count, int min, int maxExclusive) {
		checkRange(min < maxExclusive, min, maxExclusive);
		return new ParityBuffer(ElementType.INT, count, (target, random) -> {
			for (int i = 0; i < count; i++) {
				target.putInt(4 * i, random.nextInt(min, maxExclusive));
			}
		}, false, count + " random ints in [" + min + ", " + maxExclusive + ")");
	}

	/** An output of {@code count} elements of {@code type}, zero before the launch, compared after it. */
	public static ParityBuffer output(ElementType type, int count) {
		Objects.requireNonNull(type, "type");
		return new ParityBuffer(type, count, (target, random) -> {
		}, true, type.name().toLowerCase(java.util.Locale.ROOT) + "[" + count + "] output");
	}

	/** This buffer, also compared after the launch: for kernels that update their input in place. */
	public ParityBuffer compared() {
		return new ParityBuffer(this.type, this.count, this.contents, true, this.description);
	}

	private static void checkRange(boolean ordered, Object min, Object max) {
		if (!ordered) {
			throw new IllegalArgumentException("The range [" + min + ", " + max + ") is empty");
		}
	}

	ElementType type() {
		return this.type;
	}

	int count() {
		return this.count;
	}

	boolean isCompared() {
		return this.compared;
	}

	/** The initial contents, in native byte order, position 0. */
	ByteBuffer contents(SplittableRandom random) {
		ByteBuffer bytes = ByteBuffer.allocate(Math.toIntExact(this.type.byteSize(this.count))).order(ByteOrder.nativeOrder());
		this.contents.fill(bytes, random);
		return bytes.clear();
	}

	@Override
	public String toString() {
		return this.description;
	}

}
