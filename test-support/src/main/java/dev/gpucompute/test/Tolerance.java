package dev.gpucompute.test;

/**
 * How far two results of a {@link KernelParity} check may be apart and still agree. Floating-point
 * elements agree when their bits are equal, when both are NaN, or when they are within the tolerance
 * (units in the last place, absolute or relative difference); {@code -0.0} and {@code 0.0} are 0 ulps
 * apart. Integer elements agree when equal, or within an absolute tolerance. Immutable.
 */
public final class Tolerance {

	private enum Mode {

		EXACT, ULPS, ABSOLUTE_OR_RELATIVE

	}

	private final Mode mode;

	private final long ulps;

	private final double absolute;

	private final double relative;

	private Tolerance(Mode mode, long ulps, double absolute, double relative) {
		this.mode = mode;
		this.ulps = ulps;
		this.absolute = absolute;
		this.relative = relative;
	}

	/** The same bits (any NaN matches any NaN): for kernels whose CPU body does the same operations in the same order. */
	public static Tolerance exact() {
		return new Tolerance(Mode.EXACT, 0, 0, 0);
	}

	/**
	 * At most {@code maxUlps} representable values apart (in the element's own precision): for bodies
	 * that round differently, such as a CUDA body that fuses {@code a * b + c} into one FMA.
	 */
	public static Tolerance ulps(long maxUlps) {
		if (maxUlps < 0) {
			throw new IllegalArgumentException("maxUlps must not be negative, got " + maxUlps);
		}
		return new Tolerance(Mode.ULPS, maxUlps, 0, 0);
	}

	/** {@code |a - b| <= max}. */
	public static Tolerance absolute(double max) {
		return absoluteOrRelative(max, 0);
	}

	/** {@code |a - b| <= max * max(|a|, |b|)}. */
	public static Tolerance relative(double max) {
		return absoluteOrRelative(0, max);
	}

	/**
	 * Within {@code absolute} or within {@code relative} of the larger magnitude: the usual test for
	 * results that may be near zero.
	 */
	public static Tolerance absoluteOrRelative(double absolute, double relative) {
		if (!(absolute >= 0) || !(relative >= 0)) {
			throw new IllegalArgumentException("Tolerances must be 0 or more, got absolute " + absolute + ", relative "
					+ relative);
		}
		return new Tolerance(Mode.ABSOLUTE_OR_RELATIVE, 0, absolute, relative);
	}

	/** Whether two floats agree. */
	public boolean accepts(float a, float b) {
		if (Float.floatToIntBits(a) == Float.floatToIntBits(b)) {
			return true;
		}
		return switch (this.mode) {
			case EXACT -> false;
			case ULPS -> !Float.isNaN(a) && !Float.isNaN(b) && ulpsApart(a, b) <= this.ulps;
			case ABSOLUTE_OR_RELATIVE -> within(a, b);
		};
	}

	/** Whether two doubles agree. */
	public boolean accepts(double a, double b) {
		if (Double.doubleToLongBits(a) == Double.doubleToLongBits(b)) {
			return true;
		}
		return switch (this.mode) {
			case EXACT -> false;
			case ULPS -> !Double.isNaN(a) && !Double.isNaN(b) && ulpsApart(a, b) <= this.ulps;
			case ABSOLUTE_OR_RELATIVE -> within(a, b);
		};
	}

	/** Whether two integers agree: equal, or within the absolute tolerance. */
	public boolean accepts(long a, long b) {
		if (a == b) {
			return true;
		}
		double difference = Math.abs((double) a - (double) b);
		return this.mode == Mode.ABSOLUTE_OR_RELATIVE && (difference <= this.absolute
				|| difference <= this.relative * Math.max(Math.abs((double) a), Math.abs((double) b)));
	}

	private boolean within(double a, double b) {
		double difference = Math.abs(a - b);
		return difference <= this.absolute || difference <= this.relative * Math.max(Math.abs(a), Math.abs(b));
	}

	/** Representable floats between {@code a} and {@code b} (not NaN); -0.0 and 0.0 are 0 apart. */
	public static long ulpsApart(float a, float b) {
		return Math.abs(ordered(Float.floatToIntBits(a)) - ordered(Float.floatToIntBits(b)));
	}

	/** Representable doubles between {@code a} and {@code b} (not NaN), saturating at {@code Long.MAX_VALUE}. */
	public static long ulpsApart(double a, double b) {
		long x = ordered(Double.doubleToLongBits(a));
		long y = ordered(Double.doubleToLongBits(b));
		long difference = x - y;
		// Overflow when the signs differ and both are huge: further apart than any tolerance anyway.
		return (((x ^ y) & (x ^ difference)) < 0) ? Long.MAX_VALUE : Math.abs(difference);
	}

	/** Float bits mapped to a line where neighbours differ by one and both zeros are 0. */
	private static long ordered(int bits) {
		return (bits < 0) ? -(long) (bits & 0x7fffffff) : bits;
	}

	private static long ordered(long bits) {
		return (bits < 0) ? -(bits & 0x7fffffffffffffffL) : bits;
	}

	@Override
	public String toString() {
		return switch (this.mode) {
			case EXACT -> "exact";
			case ULPS -> this.ulps + " ulps";
			case ABSOLUTE_OR_RELATIVE -> "absolute " + this.absolute + " or relative " + this.relative;
		};
	}

}
