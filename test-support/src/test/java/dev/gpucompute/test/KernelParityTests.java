package dev.gpucompute.test;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;
import org.opentest4j.TestAbortedException;

import dev.gpucompute.Backend;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;

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
		assertThat(report.agrees()).isTrue();
		assertThat(report.buffers()).singleElement().satisfies((buffer) -> {
			assertThat(buffer.argument()).isEqualTo(3);
			assertThat(buffer.mismatches()).isZero();
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
		assumeFalse(GpuContext.select(Backend.CUDA, 0).availability().available(), "a CUDA device is present");
		assumeFalse("1".equals(System.getenv("GPU_REQUIRED")), "GPU_REQUIRED=1 makes this a failure");
		assertThatThrownBy(() -> KernelParity.of(SAXPY).launch(LaunchConfig.linear(4, 4))
			.args(4, 2f, ParityBuffer.randomFloats(4), ParityBuffer.randomFloats(4).compared())
			.check()).isInstanceOf(TestAbortedException.class)
			.hasMessageContaining("CUDA unavailable")
			.hasMessageContaining("kernel 'saxpy'");
	}

}
