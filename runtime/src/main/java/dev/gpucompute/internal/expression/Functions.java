package dev.gpucompute.internal.expression;

import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.jspecify.annotations.Nullable;

/**
 * The functions of the expression language. Each is defined for every input on both backends:
 * the exact ones give the same bits (IEEE 754 defines them, or their definition here does), the
 * transcendental ones differ by at most their documented ulps.
 */
public final class Functions {

	/** What a function's arguments and result are. */
	enum Shape {

		/** One floating-point argument; the result has its type. */
		FLOATING,

		/** One numeric argument; the result has its type. */
		NUMERIC,

		/** Two numeric arguments promoted to one type, which the result has. */
		NUMERIC2,

		/** Two floating-point arguments promoted to one type, which the result has. */
		FLOATING2,

		/** Three floating-point arguments promoted to one type. */
		FLOATING3,

		/** One floating-point argument; the result is a bool. */
		PREDICATE

	}

	/**
	 * One function.
	 * @param name its name in the language
	 * @param shape its arguments and result
	 * @param floatUlps for a transcendental function, the most ulps its float results differ between
	 * the backends (CUDA's documented error plus Java's, rounded from double); 0 for an exact one
	 * @param doubleUlps the same for double results
	 * @param description what it computes, for the documentation and error messages
	 */
	record Function(String name, Shape shape, int floatUlps, int doubleUlps, String description) {

		boolean exact() {
			return this.floatUlps == 0 && this.doubleUlps == 0;
		}

		int arity() {
			return switch (this.shape) {
				case FLOATING, NUMERIC, PREDICATE -> 1;
				case NUMERIC2, FLOATING2 -> 2;
				case FLOATING3 -> 3;
			};
		}

		/** The ulps a result of {@code type} may differ by. */
		int ulps(Type type) {
			return (type == Type.DOUBLE) ? this.doubleUlps : this.floatUlps;
		}

	}

	private static final Map<String, Function> ALL = new TreeMap<>();

	static {
		exact("sqrt", Shape.FLOATING, "the square root, correctly rounded");
		exact("fabs", Shape.FLOATING, "the absolute value");
		exact("abs", Shape.NUMERIC, "the absolute value; of an int or long the most negative value stays itself (it wraps)");
		exact("floor", Shape.FLOATING, "rounded down to an integer");
		exact("ceil", Shape.FLOATING, "rounded up to an integer");
		exact("trunc", Shape.FLOATING, "rounded toward zero to an integer");
		exact("rint", Shape.FLOATING, "rounded to the nearest integer, ties to even");
		exact("round", Shape.FLOATING, "rounded to the nearest integer, ties away from zero");
		exact("fmin", Shape.FLOATING2, "the smaller; a NaN argument is ignored (NaN only if both are), -0.0 < +0.0");
		exact("fmax", Shape.FLOATING2, "the larger; a NaN argument is ignored (NaN only if both are), -0.0 < +0.0");
		exact("min", Shape.NUMERIC2, "the smaller: of integers as usual, of floating-point values as fmin");
		exact("max", Shape.NUMERIC2, "the larger: of integers as usual, of floating-point values as fmax");
		exact("fmod", Shape.FLOATING2, "the remainder of x / y truncated toward zero, exactly (C's fmod, Java's %)");
		exact("copysign", Shape.FLOATING2, "x with the sign of y; with y NaN, |x| (a NaN's sign differs between backends)");
		exact("fma", Shape.FLOATING3, "x * y + z rounded once");
		exact("isnan", Shape.PREDICATE, "whether x is NaN");
		exact("isinf", Shape.PREDICATE, "whether x is infinite");
		exact("isfinite", Shape.PREDICATE, "whether x is neither infinite nor NaN");
		// CUDA's documented maximum error (CUDA C++ Programming Guide, "Mathematical Functions") plus
		// Java's: float results are computed in double by Math and rounded (within 1 ulp of float);
		// double results add Math's documented error.
		inexact("exp", Shape.FLOATING, 2 + 1, 1 + 1);
		inexact("exp2", Shape.FLOATING, 2 + 1, 1 + 1);
		inexact("expm1", Shape.FLOATING, 1 + 1, 1 + 1);
		inexact("log", Shape.FLOATING, 1 + 1, 1 + 1);
		inexact("log2", Shape.FLOATING, 1 + 1, 1 + 3);
		inexact("log10", Shape.FLOATING, 2 + 1, 1 + 1);
		inexact("log1p", Shape.FLOATING, 1 + 1, 1 + 1);
		inexact("sin", Shape.FLOATING, 2 + 1, 2 + 1);
		inexact("cos", Shape.FLOATING, 2 + 1, 2 + 1);
		inexact("tan", Shape.FLOATING, 4 + 1, 2 + 1);
		inexact("asin", Shape.FLOATING, 2 + 1, 2 + 1);
		inexact("acos", Shape.FLOATING, 2 + 1, 2 + 1);
		inexact("atan", Shape.FLOATING, 2 + 1, 2 + 1);
		inexact("sinh", Shape.FLOATING, 3 + 1, 2 + 3);
		inexact("cosh", Shape.FLOATING, 2 + 1, 1 + 3);
		inexact("tanh", Shape.FLOATING, 2 + 1, 1 + 3);
		inexact("cbrt", Shape.FLOATING, 1 + 1, 1 + 1);
		inexact("pow", Shape.FLOATING2, 4 + 1, 2 + 1);
		inexact("atan2", Shape.FLOATING2, 3 + 1, 2 + 2);
		inexact("hypot", Shape.FLOATING2, 3 + 1, 2 + 1);
	}

	private Functions() {
	}

	private static void exact(String name, Shape shape, String description) {
		ALL.put(name, new Function(name, shape, 0, 0, description));
	}

	private static void inexact(String name, Shape shape, int floatUlps, int doubleUlps) {
		ALL.put(name, new Function(name, shape, floatUlps, doubleUlps, "C's " + name + " (within " + floatUlps
				+ " ulps for float, " + doubleUlps + " for double, between the backends)"));
	}

	static @Nullable Function find(String name) {
		return ALL.get(name);
	}

	/** The names of every function, sorted. */
	public static List<String> names() {
		return List.copyOf(ALL.keySet());
	}

	/** The functions whose results may differ between the backends, by name, with their ulps for float and double. */
	public static Map<String, int[]> inexact() {
		Map<String, int[]> inexact = new TreeMap<>();
		for (Function function : ALL.values()) {
			if (!function.exact()) {
				inexact.put(function.name(), new int[] { function.floatUlps(), function.doubleUlps() });
			}
		}
		return Collections.unmodifiableMap(inexact);
	}

}
