package dev.gpucompute.expression;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.internal.expression.Functions;

/**
 * Bit equality of the two backends, without a GPU: every operator, conversion and function of the
 * expression language, for float, double, int and long, on every pair of adversarial values and on
 * random ones, run as generated Java on the CPU backend and as generated CUDA C on the emulator
 * ({@link ExpressionEmulator}). Exact operations must give the same bits; transcendental functions
 * may differ by their stated ulps (the emulator's are the host C library's, not CUDA's: the GPU test
 * checks CUDA's own).
 */
@ExtendWith(ExpressionEmulator.Available.class)
class ElementwiseParityEmulatedTests {

	static final List<String> INEXACT = List.of("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos",
			"tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "cbrt", "pow", "atan2", "hypot");

	static final KernelSource FLOAT_OPS = arithmetic("float");

	static final KernelSource DOUBLE_OPS = arithmetic("double");

	static final KernelSource FLOAT_EXACT = exact("float");

	static final KernelSource DOUBLE_EXACT = exact("double");

	static final KernelSource FLOAT_INEXACT = inexact("float");

	static final KernelSource DOUBLE_INEXACT = inexact("double");

	static final KernelSource INT_OPS = integers("int");

	static final KernelSource LONG_OPS = integers("long");

	static final KernelSource CONVERSIONS = ElementwiseKernel.named("conversions")
		.in("float[] x, double[] d, long[] l, int[] k")
		.out("int[] f2i, long[] f2l, int[] d2i, long[] d2l, float[] l2f, double[] l2d, float[] i2f, double[] i2d, "
				+ "float[] d2f, int[] l2i, long[] i2l, double[] f2d, float[] mixed, double[] mixed2")
		.body("""
				f2i = (int) x; f2l = (long) x; d2i = (int) d; d2l = (long) d;
				l2f = (float) l; l2d = (double) l; i2f = (float) k; i2d = k;
				d2f = (float) d; l2i = (int) l; i2l = k; f2d = x;
				mixed = k * x + 1; mixed2 = l + d - 2L""")
		.build();

	static final KernelSource CONTROL = ElementwiseKernel.named("control")
		.in("float[] x, int[] k, float s")
		.out("float[] y, int[] c")
		.body("""
				float t = x * s;      // a local
				int count = 0;
				if (t > 1.0f) {
				  t -= 1.0f;
				  count += 1;
				} else if (t < -1.0f || isnan(t)) {
				  t = -t;
				  count = k / 2 + 7;
				} else {
				  t *= t;
				}
				bool odd = (k & 1) == 1;
				if (odd && k != 0 && 100 / k > 3) count += 100;
				y = odd ? t : (x == 0.0f ? -0.0f : 2.0f * t);
				c = count - (k > 0 ? 1 : -1) * (k % 5)""")
		.build();

	static final KernelSource NEIGHBOURS = ElementwiseKernel.named("neighbours")
		.in("float[] x, int m, float[m] table, int[] k")
		.out("float[] y")
		.body("y = x[i - 1] + 2.0f * x + x[i + 1] + table[k] + x[k]")
		.build();

	private static GpuContext cpu;

	private static ExpressionEmulator emulator;

	@BeforeAll
	static void open() {
		cpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).open();
		emulator = ExpressionEmulator.buildOrSkip(List.of(FLOAT_OPS, DOUBLE_OPS, FLOAT_EXACT, DOUBLE_EXACT, FLOAT_INEXACT,
				DOUBLE_INEXACT, INT_OPS, LONG_OPS, CONVERSIONS, CONTROL, NEIGHBOURS));
	}

	@AfterAll
	static void close() {
		cpu.close();
	}

	private static KernelSource arithmetic(String t) {
		return ElementwiseKernel.named(t + "_ops")
			.in(t + "[] x, " + t + "[] y")
			.out(t + "[] sum, " + t + "[] difference, " + t + "[] product, " + t + "[] quotient, " + t + "[] remainder, "
					+ t + "[] negated, int[] compared")
			.body("""
					sum = x + y; difference = x - y; product = x * y; quotient = x / y; remainder = x % y; negated = -x;
					compared = (x < y ? 1 : 0) | (x <= y ? 2 : 0) | (x > y ? 4 : 0) | (x >= y ? 8 : 0) | (x == y ? 16 : 0)
					    | (x != y ? 32 : 0) | (!(x < y) ? 64 : 0) | (isnan(x) ? 128 : 0) | (isinf(x) ? 256 : 0)
					    | (isfinite(x) ? 512 : 0) | (x == x && y != y ? 1024 : 0)""")
			.build();
	}

	private static KernelSource exact(String t) {
		return ElementwiseKernel.named(t + "_exact")
			.in(t + "[] x, " + t + "[] y, " + t + "[] z")
			.out(outputs(t, "r_sqrt", "r_fabs", "r_abs", "r_floor", "r_ceil", "r_trunc", "r_rint", "r_round", "r_fmin",
					"r_fmax", "r_min", "r_max", "r_fmod", "r_copysign", "r_fma", "r_select"))
			.body("""
					r_sqrt = sqrt(x); r_fabs = fabs(x); r_abs = abs(x); r_floor = floor(x); r_ceil = ceil(x);
					r_trunc = trunc(x); r_rint = rint(x); r_round = round(x); r_fmin = fmin(x, y); r_fmax = fmax(x, y);
					r_min = min(x, y); r_max = max(x, y); r_fmod = fmod(x, y); r_copysign = copysign(x, y);
					r_fma = fma(x, y, z); r_select = x > y ? x : y * 2""")
			.build();
	}

	private static KernelSource inexact(String t) {
		StringBuilder body = new StringBuilder();
		List<String> names = new ArrayList<>();
		for (String function : INEXACT) {
			names.add("r_" + function);
			boolean two = function.equals("pow") || function.equals("atan2") || function.equals("hypot");
			body.append("r_").append(function).append(" = ").append(function).append(two ? "(x, y); " : "(x); ");
		}
		return ElementwiseKernel.named(t + "_inexact")
			.in(t + "[] x, " + t + "[] y")
			.out(outputs(t, names.toArray(new String[0])))
			.body(body.toString())
			.build();
	}

	private static KernelSource integers(String t) {
		return ElementwiseKernel.named(t + "_ops")
			.in(t + "[] a, " + t + "[] b, int[] s")
			.out(outputs(t, "r_sum", "r_difference", "r_product", "r_quotient", "r_remainder", "r_negated", "r_and",
					"r_or", "r_xor", "r_not", "r_left", "r_right", "r_unsigned", "r_lefts", "r_abs", "r_min", "r_max",
					"r_mixed") + ", int[] compared")
			.body("""
					r_sum = a + b; r_difference = a - b; r_product = a * b; r_quotient = a / b; r_remainder = a % b;
					r_negated = -a; r_and = a & b; r_or = a | b; r_xor = a ^ b; r_not = ~a; r_left = a << b;
					r_right = a >> b; r_unsigned = a >>> b; r_lefts = a << s; r_abs = abs(a); r_min = min(a, b);
					r_max = max(a, b); r_mixed = a * 3 + b / 7 - (a >> 2) % 5;
					compared = (a < b ? 1 : 0) | (a <= b ? 2 : 0) | (a > b ? 4 : 0) | (a >= b ? 8 : 0) | (a == b ? 16 : 0)
					    | (a != b ? 32 : 0)""")
			.build();
	}

	private static String outputs(String type, String... names) {
		List<String> declarations = new ArrayList<>();
		for (String name : names) {
			declarations.add(type + "[] " + name);
		}
		return String.join(", ", declarations);
	}

	// ---------------------------------------------------------------- the checks

	@Test
	void floatArithmeticAndComparisonsGiveTheSameBits() {
		List<float[]> in = Adversarial.floats(4000, 1);
		int n = in.get(0).length;
		check(FLOAT_OPS, n, Map.of(), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)), outputs(ElementType.FLOAT, n, 6),
				BothSides.zeros(ElementType.INT, n));
	}

	@Test
	void doubleArithmeticAndComparisonsGiveTheSameBits() {
		List<double[]> in = Adversarial.doubles(4000, 2);
		int n = in.get(0).length;
		check(DOUBLE_OPS, n, Map.of(), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)),
				outputs(ElementType.DOUBLE, n, 6), BothSides.zeros(ElementType.INT, n));
	}

	@Test
	void exactFloatFunctionsGiveTheSameBits() {
		List<float[]> in = Adversarial.floats(4000, 3);
		int n = in.get(0).length;
		check(FLOAT_EXACT, n, Map.of(), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)), BothSides.of(in.get(2)),
				outputs(ElementType.FLOAT, n, 16));
	}

	@Test
	void exactDoubleFunctionsGiveTheSameBits() {
		List<double[]> in = Adversarial.doubles(4000, 4);
		int n = in.get(0).length;
		check(DOUBLE_EXACT, n, Map.of(), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)), BothSides.of(in.get(2)),
				outputs(ElementType.DOUBLE, n, 16));
	}

	@Test
	void transcendentalFloatFunctionsAgreeWithinTheirUlps() {
		List<float[]> in = Adversarial.floats(4000, 5);
		int n = in.get(0).length;
		check(FLOAT_INEXACT, n, ulps(ElementType.FLOAT, 3), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)),
				outputs(ElementType.FLOAT, n, INEXACT.size()));
	}

	@Test
	void transcendentalDoubleFunctionsAgreeWithinTheirUlps() {
		List<double[]> in = Adversarial.doubles(4000, 6);
		int n = in.get(0).length;
		check(DOUBLE_INEXACT, n, ulps(ElementType.DOUBLE, 3), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)),
				outputs(ElementType.DOUBLE, n, INEXACT.size()));
	}

	@Test
	void intOperationsWrapAndDivideByZeroAlike() {
		List<int[]> in = Adversarial.ints(3000, 7);
		int n = in.get(0).length;
		int[] shifts = Adversarial.ints(n, 8).get(1);
		check(INT_OPS, n, Map.of(), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)),
				BothSides.of(java.util.Arrays.copyOf(shifts, n)), outputs(ElementType.INT, n, 18),
				BothSides.zeros(ElementType.INT, n));
	}

	@Test
	void longOperationsWrapAndDivideByZeroAlike() {
		List<long[]> in = Adversarial.longs(3000, 9);
		int n = in.get(0).length;
		int[] shifts = Adversarial.ints(n, 10).get(1);
		check(LONG_OPS, n, Map.of(), n, BothSides.of(in.get(0)), BothSides.of(in.get(1)),
				BothSides.of(java.util.Arrays.copyOf(shifts, n)), outputs(ElementType.LONG, n, 18),
				BothSides.zeros(ElementType.INT, n));
	}

	@Test
	void conversionsSaturateAndTurnNanIntoZeroAlike() {
		List<float[]> f = Adversarial.floats(2000, 11);
		int n = f.get(0).length;
		List<Object> rest = Adversarial.fit(n, List.of(Adversarial.doubles(2000, 12).get(0), Adversarial.longs(2000, 13).get(0),
				Adversarial.ints(2000, 14).get(0)));
		check(CONVERSIONS, n, Map.of(), n, BothSides.of(f.get(0)), BothSides.of(rest.get(0)), BothSides.of(rest.get(1)),
				BothSides.of(rest.get(2)), BothSides.zeros(ElementType.INT, n), BothSides.zeros(ElementType.LONG, n),
				BothSides.zeros(ElementType.INT, n), BothSides.zeros(ElementType.LONG, n), BothSides.zeros(ElementType.FLOAT, n),
				BothSides.zeros(ElementType.DOUBLE, n), BothSides.zeros(ElementType.FLOAT, n),
				BothSides.zeros(ElementType.DOUBLE, n), BothSides.zeros(ElementType.FLOAT, n), BothSides.zeros(ElementType.INT, n),
				BothSides.zeros(ElementType.LONG, n), BothSides.zeros(ElementType.DOUBLE, n),
				BothSides.zeros(ElementType.FLOAT, n), BothSides.zeros(ElementType.DOUBLE, n));
	}

	@Test
	void localsBranchesAndTheTernaryAgree() {
		List<float[]> f = Adversarial.floats(3000, 15);
		int n = f.get(0).length;
		int[] k = (int[]) Adversarial.fit(n, List.of(Adversarial.ints(500, 16).get(0))).get(0);
		for (float s : new float[] { 1.0f, -3.5f, Float.NaN }) {
			check(CONTROL, n, Map.of(), n, BothSides.of(f.get(0)), BothSides.of(k), s, BothSides.zeros(ElementType.FLOAT, n),
					BothSides.zeros(ElementType.INT, n));
		}
	}

	@Test
	void neighboursOutsideTheArrayReadAsZeroAlike() {
		int n = 3000;
		float[] x = Adversarial.floats(n, 17).get(1);
		x = java.util.Arrays.copyOf(x, n);
		float[] table = { 1.5f, -2f, 0.25f, 1e30f, -0f };
		int[] k = new int[n];
		for (int e = 0; e < n; e++) {
			k[e] = (e % 11) - 3; // -3 .. 7: inside and outside the table and the array
		}
		k[n - 1] = n;   // one past the end of x
		k[n - 2] = Integer.MIN_VALUE;
		check(NEIGHBOURS, n, Map.of(), n, BothSides.of(x), table.length, BothSides.of(table), BothSides.of(k),
				BothSides.zeros(ElementType.FLOAT, n));
	}

	@Test
	void aSmallerGridCoversEveryElementOnTheEmulatorToo() {
		List<float[]> in = Adversarial.floats(1000, 18);
		int n = in.get(0).length;
		Object[] args = { n, BothSides.of(in.get(0)), BothSides.of(in.get(1)), outputs(ElementType.FLOAT, n, 6),
				BothSides.zeros(ElementType.INT, n) };
		args = flatten(args);
		List<ByteBuffer> cpuResult = BothSides.onCpu(cpu, FLOAT_OPS, LaunchConfig.of(Dim3.of(2), Dim3.of(64)), args);
		List<ByteBuffer> emulated = BothSides.onEmulator(emulator, FLOAT_OPS, 3, 96, args);
		BothSides.compare(FLOAT_OPS, names(FLOAT_OPS), args, cpuResult, emulated, Map.of());
	}

	@Test
	void everyFunctionOfTheLanguageIsCheckedHere() {
		List<String> checked = new ArrayList<>(INEXACT);
		checked.addAll(List.of("sqrt", "fabs", "abs", "floor", "ceil", "trunc", "rint", "round", "fmin", "fmax", "min",
				"max", "fmod", "copysign", "fma", "isnan", "isinf", "isfinite"));
		assertThat(checked).containsExactlyInAnyOrderElementsOf(Functions.names());
	}

	// ---------------------------------------------------------------- helpers

	/** {@code count} zeroed outputs, flattened into the argument list by {@link #check}. */
	private static Object[] outputs(ElementType type, int n, int count) {
		Object[] buffers = new Object[count];
		for (int k = 0; k < count; k++) {
			buffers[k] = BothSides.zeros(type, n);
		}
		return buffers;
	}

	/**
	 * The emulator's transcendental functions are the host C library's, not CUDA's: glibc's stated
	 * maximum errors on x86-64 (its libm-test-ulps) reach 4 ulps for these functions (cbrt, for one),
	 * where CUDA's stated bound is smaller. So the emulated comparison allows the kernel's bound with
	 * CUDA's part replaced by up to 4 ulps; special values (NaN, infinities, zeros) still have to agree
	 * exactly. The GPU test holds CUDA to the kernel's own bound.
	 */
	private static final int HOST_LIBRARY_ULPS = 4;

	/** For the inexact kernels: each output's ulps, by argument index ({@code first} is the first output's). */
	private static Map<Integer, Integer> ulps(ElementType type, int first) {
		Map<Integer, Integer> ulps = new HashMap<>();
		Map<String, int[]> inexact = Functions.inexact();
		for (int k = 0; k < INEXACT.size(); k++) {
			int[] bounds = inexact.get(INEXACT.get(k));
			ulps.put(first + k, ((type == ElementType.FLOAT) ? bounds[0] : bounds[1]) + HOST_LIBRARY_ULPS);
		}
		return ulps;
	}

	private static Object[] flatten(Object[] args) {
		List<Object> flat = new ArrayList<>();
		for (Object arg : args) {
			if (arg instanceof Object[] many) {
				flat.addAll(List.of(many));
			}
			else {
				flat.add(arg);
			}
		}
		return flat.toArray();
	}

	private static List<String> names(KernelSource source) {
		return ExpressionKernel.of(source).orElseThrow().parameters();
	}

	private static void check(KernelSource source, int n, Map<Integer, Integer> ulps, Object... rawArgs) {
		Object[] args = flatten(rawArgs);
		assertThat(args).hasSize(source.paramCount());
		List<ByteBuffer> cpuResult = BothSides.onCpu(cpu, source, LaunchConfig.linear(n, 256), args);
		List<ByteBuffer> emulated = BothSides.onEmulator(emulator, source, (n + 255) / 256, 256, args);
		long compared = BothSides.compare(source, names(source), args, cpuResult, emulated, ulps);
		assertThat(compared).isGreaterThanOrEqualTo(n);
	}

}
