package dev.gpucompute.test;

/**
 * How far two results of a {@link KernelParity} check may be apart and still agree. Floating-point
 * elements agree when their bits are equal, when both are NaN, or when they are within the tolerance
 * (units in the last place, absolute or relative difference, or the bound of contracted multiply-adds);
 * {@code -0.0} and {@code 0.0} are 0 ulps apart. Integer elements agree when equal, or within an
 * absolute tolerance. Immutable.
 *
 * <p>Which to state: {@link #exact()} when both bodies do the same operations in the same order
 * (including {@code fmaf} in CUDA against {@code Math.fma} in Java, or a CUDA body compiled with
 * {@code -fmad=false}); {@link #fusedMultiplyAdds(int, double)} when the CUDA compiler may contract
 * {@code a * b + c} into one fused multiply-add (NVRTC's and nvcc's default) and the Java body rounds
 * the product; {@link #ulps(long)} only for operations whose error is bounded relative to their result
 * (a CUDA math function's documented ulp error, {@code -use_fast_math} division). Ulps of the result do
 * not bound a contraction: near cancellation a multiply-add's result is much smaller than its product,
 * and the product's rounding, which one body skips, is thousands of ulps of that result.
 */
public final class Tolerance {

	private enum Mode {

		EXACT, ULPS, ABSOLUTE_OR_RELATIVE, FUSED_MULTIPLY_ADDS

	}

	/** The unit roundoff of float (half an ulp of 1): a rounding changes a value by at most this fraction. */
	private static final double FLOAT_ROUNDOFF = 0x1p-24;

	/** The unit roundoff of double. */
	private static final double DOUBLE_ROUNDOFF = 0x1p-53;

	private final Mode mode;

	private final long ulps;

	private final double absolute;

	private final double relative;

	/** For {@link Mode#FUSED_MULTIPLY_ADDS}: how many multiply-adds may be contracted per element. */
	private final int multiplyAdds;

	/** For {@link Mode#FUSED_MULTIPLY_ADDS}: the bound on every product and sum. */
	private final double magnitude;

	private Tolerance(Mode mode, long ulps, double absolute, double relative) {
		this(mode, ulps, absolute, relative, 0, 0);
	}

	private Tolerance(Mode mode, long ulps, double absolute, double relative, int multiplyAdds, double magnitude) {
		this.mode = mode;
		this.ulps = ulps;
		this.absolute = absolute;
		this.relative = relative;
		this.multiplyAdds = multiplyAdds;
		this.magnitude = magnitude;
	}

	/** The same bits (any NaN matches any NaN): for kernels whose CPU body does the same operations in the same order. */
	public static Tolerance exact() {
		return new Tolerance(Mode.EXACT, 0, 0, 0);
	}

	/**
	 * At most {@code maxUlps} representable values apart (in the element's own precision): for results
	 * whose error is bounded relative to the result itself, such as a CUDA math function with a
	 * documented error in ulps against Java's correctly rounded one. Not for contracted multiply-adds:
	 * their difference is bounded relative to the product, not the result (see
	 * {@link #fusedMultiplyAdds(int, double)}).
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

	/**
	 * The bound of a CUDA body whose compiler may contract {@code a * b + c} into one fused multiply-add
	 * (rounded once) against a body that rounds the product and then the sum (Java, or CUDA with
	 * {@code -fmad=false}): results agree when
	 * {@code |a - b| <= 3 * multiplyAdds * u * magnitude} (plus {@code 1.5 * multiplyAdds} times the
	 * smallest subnormal, for results near underflow), where {@code u} is the unit roundoff of the
	 * element's precision ({@code 2^-24} for float, {@code 2^-53} for double).
	 *
	 * <p>Why: each multiply-add {@code s' = p + s} ({@code p} a product) is rounded once on each side,
	 * and the side that does not fuse also rounds {@code p}; each rounding moves a value by at most
	 * {@code u} times its magnitude. When both sides then go on with their own {@code s'}, the
	 * differences add up: at most {@code u * (|p| + |s'| + |s'|)} per multiply-add. So the bound holds
	 * where {@code magnitude} bounds the magnitude of every product and of every sum, intermediate and
	 * final, on either side, and where the kernel accumulates: each product's factors are inputs or
	 * values both sides compute alike (saxpy, a dot product, a matrix product, a stencil's weighted sum).
	 * Where a contracted result is itself a factor of a later product (Horner's scheme, iterations), the
	 * difference is multiplied too: derive that kernel's bound and state it with {@link #absolute(double)}.
	 *
	 * <p>Example: {@code y[i] = a * x[i] + y[i]} with {@code a = 2.5} and {@code x}, {@code y} in
	 * {@code [-1, 1)}: one multiply-add, products up to 2.5 and sums up to 3.5, so
	 * {@code fusedMultiplyAdds(1, 3.5)} (6.3e-7 for floats). Where a sum cancels to nearly zero its
	 * result differs by up to half an ulp of the product, which is thousands of ulps of the result.
	 * @param multiplyAdds how many multiply-adds the compiler may contract on the way to one element
	 * (a dot product of length n: n)
	 * @param magnitude a bound on every product and every sum those multiply-adds compute
	 */
	public static Tolerance fusedMultiplyAdds(int multiplyAdds, double magnitude) {
		if (multiplyAdds < 1) {
			throw new IllegalArgumentException("multiplyAdds must be 1 or more, got " + multiplyAdds);
		}
		if (!(magnitude >= 0) || Double.isInfinite(magnitude)) {
			throw new IllegalArgumentException("magnitude must be finite and 0 or more, got " + magnitude);
		}
		return new Tolerance(Mode.FUSED_MULTIPLY_ADDS, 0, 0, 0, multiplyAdds, magnitude);
	}

	/** The largest difference {@link #fusedMultiplyAdds(int, double)} accepts between two floats; NaN for others. */
	double floatBound() {
		return (this.mode == Mode.FUSED_MULTIPLY_ADDS) ? fusedBound(FLOAT_ROUNDOFF, Float.MIN_VALUE) : Double.NaN;
	}

	/** The largest difference {@link #fusedMultiplyAdds(int, double)} accepts between two doubles; NaN for others. */
	double doubleBound() {
		return (this.mode == Mode.FUSED_MULTIPLY_ADDS) ? fusedBound(DOUBLE_ROUNDOFF, Double.MIN_VALUE) : Double.NaN;
	}

	private double fusedBound(double roundoff, double smallest) {
		return this.multiplyAdds * (3 * roundoff * this.magnitude + 1.5 * smallest);
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
			case FUSED_MULTIPLY_ADDS -> Math.abs((double) a - (double) b) <= floatBound();
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
			case FUSED_MULTIPLY_ADDS -> Math.abs(a - b) <= doubleBound();
		};
	}

	/** Whether two integers agree: equal, or within the absolute tolerance ({@link #fusedMultiplyAdds} is exact on integers). */
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
			case FUSED_MULTIPLY_ADDS -> this.multiplyAdds + " fused multiply-add" + ((this.multiplyAdds == 1) ? "" : "s")
					+ " over magnitudes up to " + this.magnitude + " (floats within " + (float) floatBound()
					+ ", doubles within " + (float) doubleBound() + ")";
		};
	}

}
