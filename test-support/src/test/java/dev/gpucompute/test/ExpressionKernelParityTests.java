package dev.gpucompute.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.expression.ElementwiseKernel;
import dev.gpucompute.expression.Reduction;
import dev.gpucompute.expression.ReductionKernel;

/**
 * {@link KernelParity} for kernels written once: no CPU body to write and no tolerance to state; the
 * kernel's own is applied. Here on two CPU contexts with different numbers of workers (the CUDA side is
 * {@code ExpressionKernelParityCudaGpuTests}).
 */
class ExpressionKernelParityTests {

	static final KernelSource SAXPY = ElementwiseKernel.named("saxpy_once").in("float a, float[] x").out("float[] y")
		.body("y = a * x + y").build();

	static final KernelSource SOFTPLUS = ElementwiseKernel.named("softplus_once").in("float[] x").out("float[] y")
		.body("y = log1p(exp(x))").build();

	static final Reduction SUM = ReductionKernel.named("sum_once").in("float[] x").out("float[] total").map("x")
		.reduce("a + b").identity("0.0f").build();

	private GpuContext first;

	private GpuContext second;

	@BeforeEach
	void open() {
		this.first = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).open();
		this.second = GpuContext.builder().backend(Backend.CPU).cpuThreads(3).open();
	}

	@AfterEach
	void close() {
		this.first.close();
		this.second.close();
	}

	@Test
	void anIeeeKernelIsExpectedToAgreeBitForBit() {
		int n = 5000;
		KernelParity check = KernelParity.of(SAXPY).launch(LaunchConfig.linear(n, 256))
			.args(n, 2.5f, ParityBuffer.randomFloats(n), ParityBuffer.randomFloats(n).compared());
		assertThat(check.expectedTolerance().toString()).isEqualTo(Tolerance.exact().toString());
		assertThat(check.check(this.first, this.second).agrees()).isTrue();
	}

	@Test
	void aTranscendentalKernelIsExpectedWithinItsStatedUlps() {
		KernelParity check = KernelParity.of(SOFTPLUS).launch(LaunchConfig.linear(100, 32))
			.args(100, ParityBuffer.randomFloats(100), ParityBuffer.output(ElementType.FLOAT, 100));
		assertThat(check.expectedTolerance().toString()).isEqualTo(Tolerance.ulps(3).toString());
		assertThat(check.check(this.first, this.second).tolerance().toString()).isEqualTo(Tolerance.ulps(3).toString());
	}

	@Test
	void aReductionIsCheckedThroughItsOwnLaunch() {
		int n = 100_000;
		ParityReport report = KernelParity.of(SUM)
			.args(n, ParityBuffer.randomFloats(n), ParityBuffer.output(ElementType.FLOAT, 1))
			.check(this.first, this.second);
		assertThat(report.agrees()).isTrue();
		assertThat(report.buffers()).singleElement().satisfies((buffer) -> assertThat(buffer.argument()).isEqualTo(2));
	}

	@Test
	void fastMathStatesNoBoundSoTheTestMustGiveOne() {
		KernelSource fast = ElementwiseKernel.named("fast_once").in("float[] x").out("float[] y").body("y = exp(x)")
			.fastMathGivingUpBitParity().build();
		KernelParity check = KernelParity.of(fast).launch(LaunchConfig.linear(10, 32))
			.args(10, ParityBuffer.randomFloats(10), ParityBuffer.output(ElementType.FLOAT, 10));
		assertThatThrownBy(check::expectedTolerance).isInstanceOf(IllegalStateException.class)
			.hasMessageContaining("fast math");
		assertThat(check.tolerance(Tolerance.relative(1e-5)).check(this.first, this.second).agrees()).isTrue();
	}

}
