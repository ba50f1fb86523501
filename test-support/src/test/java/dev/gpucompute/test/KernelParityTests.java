package dev.gpucompute.test;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

import dev.gpucompute.Backend;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.spi.Backends;

/**
 * {@link KernelParity} on two CPU contexts, whose kernels here differ between runs on purpose, so
 * that the comparison and its report are tested without a GPU; and its skip without one.
 */
@GpuLeakCheck
class KernelParityTests {

	private static final String SAXPY_CUDA = """
			extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
			  int i = blockIdx.x * blockDim.x + threadIdx.x;
			  if (i < n) y[i] = a * x[i] + y[i];
			}""";

	static final KernelSource SAXPY = KernelSource.named("saxpy").params(INT, FLOAT, BUFFER, BUFFER).cuda(SAXPY_CUDA)
		.cpu((block, args) -> {
			int n = args.i32(0);
			float a = args.f32(1);
			FloatBuffer x = args.floats(2);
			FloatBuffer y = args.floats(3);
			for (int i = (int) block.firstIndex(); i < block.endIndex(n); i++) {
				y.put(i, a * x.get(i) + y.get(i));
			}
		});

	/** Runs counted per kernel source: the second run of a check writes something else. */
	private final AtomicInteger runs = new AtomicInteger();

	private GpuContext first;

	private GpuContext second;

	@BeforeEach
	void open() {
		this.first = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).open();
		this.second = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).open();
	}

	@AfterEach
	void close() {
		this.first.close();
		this.second.close();
	}

	/** Writes 1.0 everywhere on its first run and {@code second(1.0)} at index 5 on its second. */
	private KernelSource drifting(String name, java.util.function.DoubleUnaryOperator second) {
		return KernelSource.named(name).params(INT, BUFFER)
			.cuda("extern \"C\" __global__ void " + name + "(int n, float* out) {}")
			.cpu((block, args) -> {
				int run = this.runs.incrementAndGet();
				FloatBuffer out = args.floats(1);
				for (int i = 0; i < args.i32(0); i++) {
					out.put(i, (run == 2 && i == 5) ? (float) second.applyAsDouble(1.0) : 1.0f);
				}
			});
	}

	@Test
	void identicalBodiesAgreeAndTheReportSaysSo() {
		int n = 1000;
		ParityReport report = KernelParity.of(SAXPY).launch(LaunchConfig.linear(n, 128))
			.args(n, 2f, ParityBuffer.randomFloats(n), ParityBuffer.randomFloats(n).compared())
			.check(this.first, this.second);
		// check() throws when they disagree; the report says which buffer it compared, whole, and how closely.
		assertThat(report.buffers()).singleElement().satisfies((buffer) -> {
			assertThat(buffer.argument()).isEqualTo(3);
			assertThat(buffer.count()).isEqualTo(n);
			assertThat(buffer.maxUlps()).as("identical bodies, identical bits").isZero();
		});
		assertThat(report.first()).isEqualTo("CPU device 0");
	}

	@Test
	void aDisagreementFailsNamingTheKernelArgumentIndexAndValues() {
		KernelParity check = KernelParity.of(drifting("drift", (v) -> Math.nextUp((float) v))).launch(LaunchConfig.linear(1, 1))
			.args(10, ParityBuffer.output(ElementType.FLOAT, 10));
		assertThatThrownBy(() -> check.check(this.first, this.second)).isInstanceOf(AssertionFailedError.class)
			.hasMessageContaining("Kernel 'drift'")
			.hasMessageContaining("tolerance exact")
			.hasMessageContaining("argument 1 (FLOAT[10]): 1 of 10 disagree, the first at index 5")
			.hasMessageContaining("1.0 (0x3f800000) vs 1.0000001 (0x3f800001)")
			.hasMessageContaining("largest difference 1 ulps");
	}

	@Test
	void aToleranceAcceptsWhatItStates() {
		KernelSource oneUlp = drifting("one_ulp", (v) -> Math.nextUp((float) v));
		KernelParity.of(oneUlp).launch(LaunchConfig.linear(1, 1)).args(10, ParityBuffer.output(ElementType.FLOAT, 10))
			.tolerance(Tolerance.ulps(1)).check(this.first, this.second);
		this.runs.set(0);
		KernelParity twoUlps = KernelParity.of(drifting("two_ulps", (v) -> Math.nextUp(Math.nextUp((float) v))))
			.launch(LaunchConfig.linear(1, 1)).args(10, ParityBuffer.output(ElementType.FLOAT, 10)).tolerance(Tolerance.ulps(1));
		assertThatThrownBy(() -> twoUlps.check(this.first, this.second)).hasMessageContaining("largest difference 2 ulps");
		this.runs.set(0);
		KernelParity.of(drifting("shifted", (v) -> v + 1e-3)).launch(LaunchConfig.linear(1, 1))
			.args(10, ParityBuffer.output(ElementType.FLOAT, 10)).tolerance(Tolerance.absolute(2e-3))
			.check(this.first, this.second);
	}

	/**
	 * saxpy whose CPU body stands for the CUDA body compiled with contraction on its first run (one
	 * rounding: {@code Math.fma}) and for the Java body on its second (the product rounded, then the
	 * sum): one block does all elements, so that a run is one call.
	 */
	private KernelSource contractedThenRounded() {
		return KernelSource.named("saxpy").params(INT, FLOAT, BUFFER, BUFFER).cuda(SAXPY_CUDA).cpu((block, args) -> {
			boolean fused = this.runs.incrementAndGet() == 1;
			int n = args.i32(0);
			float a = args.f32(1);
			FloatBuffer x = args.floats(2);
			FloatBuffer y = args.floats(3);
			for (int i = 0; i < n; i++) {
				y.put(i, fused ? Math.fma(a, x.get(i), y.get(i)) : a * x.get(i) + y.get(i));
			}
		});
	}

	/** One source per test: a context holds one kernel of a name. */
	private final KernelSource contracted = contractedThenRounded();

	private KernelParity contractedSaxpy(Tolerance tolerance) {
		this.runs.set(0);
		int n = 100_003;
		return KernelParity.of(this.contracted).launch(LaunchConfig.of(Dim3.of(1), Dim3.of(1)))
			.args(n, 2.5f, ParityBuffer.randomFloats(n), ParityBuffer.randomFloats(n).compared())
			.tolerance(tolerance);
	}

	@Test
	void aContractedMultiplyAddIsNotWithinOneUlpNearCancellation() {
		// The GPU run's failure without a GPU: the same inputs (seed 24) and the same report, element for
		// element, as CUDA on an H200 against the CPU body, so the difference there is the contraction.
		assertThatThrownBy(() -> contractedSaxpy(Tolerance.ulps(1)).check(this.first, this.second))
			.isInstanceOf(AssertionFailedError.class)
			.hasMessageContaining("argument 3 (FLOAT[100003]): 4658 of 100003 disagree, the first at index 7 "
					+ "(0.032589093 (0x3d057c24) vs 0.032589078 (0x3d057c20)); largest difference 65536 ulps, "
					+ "2.384185791015625E-7 absolute");
	}

	@Test
	void aContractedMultiplyAddIsWithinTheBoundOfFusedMultiplyAdds() {
		// One multiply-add; |a * x| <= 2.5 and |a * x + y| < 3.5.
		// check() throws when they disagree; what is left to see is by how much they differ.
		ParityReport report = contractedSaxpy(Tolerance.fusedMultiplyAdds(1, 3.5)).check(this.first, this.second);
		assertThat(report.buffers()).singleElement().satisfies((buffer) -> {
			assertThat(buffer.maxUlps()).isEqualTo(65536);
			assertThat(buffer.maxAbsoluteDifference()).isPositive()
				.isLessThanOrEqualTo(Tolerance.fusedMultiplyAdds(1, 3.5).floatBound());
		});
		// A bound for magnitudes up to 0.1 only is too small for these: the tolerance is no blanket.
		assertThatThrownBy(() -> contractedSaxpy(Tolerance.fusedMultiplyAdds(1, 0.1)).check(this.first, this.second))
			.hasMessageContaining("disagree");
	}

	@Test
	void theFusedMultiplyAddBoundHoldsForContractedDotProducts() {
		// Dot products of 1 to 64 terms of widely varying magnitudes, with cancellation: every step fused
		// (CUDA's contraction) against every product rounded first (Java). magnitude = the largest
		// product and partial sum of either side, as fusedMultiplyAdds asks.
		SplittableRandom random = new SplittableRandom(7);
		int beyondOneUlp = 0;
		for (int round = 0; round < 20_000; round++) {
			int length = 1 + random.nextInt(64);
			float fused = 0;
			float rounded = 0;
			double fusedD = 0;
			double roundedD = 0;
			double magnitude = 0;
			double magnitudeD = 0;
			for (int i = 0; i < length; i++) {
				float x = (float) (random.nextDouble(-1, 1) * Math.pow(2, random.nextInt(-20, 20)));
				float y = (float) (random.nextDouble(-1, 1) * Math.pow(2, random.nextInt(-20, 20)));
				if (i == length - 1 && random.nextBoolean()) {
					// The last product cancels the sum so far, up to the rounding of the product.
					y = (float) (-rounded / x);
				}
				fused = Math.fma(x, y, fused);
				rounded = x * y + rounded;
				double xd = x * 1.000000123456789;
				fusedD = Math.fma(xd, y, fusedD);
				roundedD = xd * y + roundedD;
				magnitude = Math.max(magnitude, Math.max(Math.abs((double) x * y), Math.max(Math.abs(fused), Math.abs(rounded))));
				magnitudeD = Math.max(magnitudeD, Math.max(Math.abs(xd * y) * (1 + 0x1p-52),
						Math.max(Math.abs(fusedD), Math.abs(roundedD))));
			}
			Tolerance bound = Tolerance.fusedMultiplyAdds(length, magnitude);
			assertThat(bound.accepts(fused, rounded)).as("%d terms: %s vs %s, %s", length, fused, rounded, bound).isTrue();
			assertThat(Tolerance.fusedMultiplyAdds(length, magnitudeD).accepts(fusedD, roundedD))
				.as("%d terms in double: %s vs %s", length, fusedD, roundedD).isTrue();
			if (!Tolerance.ulps(1).accepts(fused, rounded)) {
				beyondOneUlp++;
			}
		}
		assertThat(beyondOneUlp).as("dot products where one ulp is not enough").isGreaterThan(1000);
	}

	@Test
	void fusedMultiplyAddsAcceptsExactlyItsBound() {
		Tolerance one = Tolerance.fusedMultiplyAdds(1, 3.5);
		double bound = 3 * 0x1p-24 * 3.5 + 1.5 * Float.MIN_VALUE;
		assertThat(one.floatBound()).isEqualTo(bound);
		assertThat(one.accepts(0.5f, (float) (0.5 + 0.99 * bound))).isTrue();
		assertThat(one.accepts(0.5f, (float) (0.5 + 1.01 * bound))).isFalse();
		assertThat(Tolerance.fusedMultiplyAdds(4, 3.5).accepts(0.5f, (float) (0.5 + 3.9 * bound))).isTrue();
		assertThat(one.accepts(1.0, 1.0 + 3 * 0x1p-53 * 3.5 * 0.99)).isTrue();
		assertThat(one.accepts(1.0, 1.0 + 1e-12)).isFalse();
		assertThat(one.accepts(Float.NaN, 0f)).isFalse();
		assertThat(one.accepts(Float.NaN, Float.NaN)).isTrue();
		assertThat(one.accepts(Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY)).isFalse();
		assertThat(Tolerance.fusedMultiplyAdds(1, 1e9).accepts(5L, 6L)).as("integers stay exact").isFalse();
		assertThat(Tolerance.fusedMultiplyAdds(1, 0).accepts(Float.MIN_VALUE, 0f)).as("rounding near underflow").isTrue();
		assertThat(one).hasToString("1 fused multiply-add over magnitudes up to 3.5 (floats within 6.2584877E-7, "
				+ "doubles within 1.1657342E-15)");
		assertThatThrownBy(() -> Tolerance.fusedMultiplyAdds(0, 1)).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> Tolerance.fusedMultiplyAdds(1, Double.NaN)).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> Tolerance.fusedMultiplyAdds(1, Double.POSITIVE_INFINITY))
			.isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void integersAreComparedExactly() {
		KernelSource counter = KernelSource.named("count").params(BUFFER).cuda("extern \"C\" __global__ void count(int* c) {}")
			.cpu((block, args) -> {
				IntBuffer out = args.ints(0);
				out.put(0, out.get(0) + this.runs.incrementAndGet());
			});
		assertThatThrownBy(() -> KernelParity.of(counter).launch(LaunchConfig.linear(1, 1))
			.args(ParityBuffer.of(new int[] { 40 }).compared())
			.check(this.first, this.second)).hasMessageContaining("41 vs 42");
	}

	@Test
	void toleranceArithmetic() {
		assertThat(Tolerance.ulpsApart(1f, Math.nextUp(1f))).isEqualTo(1);
		assertThat(Tolerance.ulpsApart(-0f, 0f)).isZero();
		assertThat(Tolerance.ulpsApart(Float.MIN_VALUE, -Float.MIN_VALUE)).isEqualTo(2);
		assertThat(Tolerance.ulpsApart(1.0, Math.nextDown(1.0))).isEqualTo(1);
		assertThat(Tolerance.ulpsApart(Double.MAX_VALUE, -Double.MAX_VALUE)).isEqualTo(Long.MAX_VALUE);
		assertThat(Tolerance.exact().accepts(Float.NaN, Float.NaN)).isTrue();
		assertThat(Tolerance.ulps(1000).accepts(Float.NaN, 1f)).isFalse();
		assertThat(Tolerance.relative(1e-3).accepts(1000.0, 1000.9)).isTrue();
		assertThat(Tolerance.relative(1e-3).accepts(1000.0, 1001.1)).isFalse();
		assertThat(Tolerance.absoluteOrRelative(1e-6, 1e-3).accepts(0.0, 1e-7)).isTrue();
		assertThat(Tolerance.absolute(2).accepts(5L, 7L)).isTrue();
		assertThat(Tolerance.ulps(5).accepts(5L, 6L)).isFalse();
		assertThatThrownBy(() -> Tolerance.ulps(-1)).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> Tolerance.absolute(Double.NaN)).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void aKernelNeedsBothBodies() {
		KernelSource cpuOnly = KernelSource.named("k").params(INT).cpu((block, args) -> {
		});
		assertThatThrownBy(() -> KernelParity.of(cpuOnly).launch(LaunchConfig.linear(1, 1)).args(1).check())
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("no CUDA code");
	}

	@Test
	void withoutCudaTheCheckIsSkippedWithTheReason() {
		assumeFalse(Backends.select(Backend.CUDA, 0).availability().available(), "a CUDA device is present");
		assumeFalse("1".equals(System.getenv("GPU_REQUIRED")), "GPU_REQUIRED=1 makes this a failure");
		assertThatThrownBy(() -> KernelParity.of(SAXPY).launch(LaunchConfig.linear(4, 4))
			.args(4, 2f, ParityBuffer.randomFloats(4), ParityBuffer.randomFloats(4).compared())
			.check()).isInstanceOf(TestAbortedException.class)
			.hasMessageContaining("CUDA unavailable")
			.hasMessageContaining("kernel 'saxpy'");
	}

}
