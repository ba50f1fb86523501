package dev.gpucompute.test;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.gpucompute.ElementType;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.expression.ElementwiseKernel;
import dev.gpucompute.expression.Reduction;
import dev.gpucompute.expression.ReductionKernel;

/**
 * Kernels written once on CUDA device 0 against the CPU backend, with the tolerance each states:
 * bit for bit for IEEE arithmetic and exact functions (signed zeros, subnormals, infinities and NaN
 * among the inputs), a float sum in the kernel's order, and transcendental functions within their
 * stated ulps (CUDA's documented error plus Java's). Needs a GPU: skipped without one, failed with
 * {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@RequiresCuda
class ExpressionKernelParityCudaGpuTests {

	static final KernelSource ARITHMETIC = ElementwiseKernel.named("gpu_arithmetic")
		.in("float[] x, float[] y")
		.out("float[] s, float[] p, float[] q, float[] r, float[] m, float[] f, int[] k")
		.body("s = x + y; p = x * y; q = x / y; r = fmod(x, y); m = fmin(x, y) + fmax(x, y); f = fma(x, y, sqrt(fabs(y)));"
				+ " k = (int) (x * 1e9f) / ((int) y | 1) + (int) round(x) % 7")
		.build();

	static final KernelSource TRANSCENDENTAL = ElementwiseKernel.named("gpu_transcendental")
		.in("float[] x, float[] y")
		.out("float[] e, float[] l, float[] t, float[] p, float[] a")
		.body("e = exp(x); l = log(fabs(x)); t = tanh(x); p = pow(fabs(x), y); a = atan2(x, y)")
		.build();

	static final Reduction SUM = ReductionKernel.named("gpu_sum").in("float[] x").out("float[] total").map("x * x")
		.reduce("a + b").identity("0.0f").postMap("sqrt(a)").build();

	static final Reduction ROW_MAX = ReductionKernel.named("gpu_row_max").in("float[] x").out("float[] peaks").map("x")
		.reduce("fmax(a, b)").identity("-1.0f / 0.0f").segmented().build();

	@Test
	void ieeeArithmeticAndExactFunctionsGiveTheSameBits() {
		int n = 1 << 18;
		KernelParity.of(ARITHMETIC).launch(LaunchConfig.linear(n, 256))
			.args(n, ParityBuffer.randomFloats(n, -1e3f, 1e3f), ParityBuffer.randomFloats(n, -1e-3f, 1e-3f),
					ParityBuffer.output(ElementType.FLOAT, n), ParityBuffer.output(ElementType.FLOAT, n),
					ParityBuffer.output(ElementType.FLOAT, n), ParityBuffer.output(ElementType.FLOAT, n),
					ParityBuffer.output(ElementType.FLOAT, n), ParityBuffer.output(ElementType.FLOAT, n),
					ParityBuffer.output(ElementType.INT, n))
			.check();
	}

	@Test
	void transcendentalFunctionsAgreeWithinTheirStatedUlps() {
		int n = 1 << 16;
		KernelParity.of(TRANSCENDENTAL).launch(LaunchConfig.linear(n, 256))
			.args(n, ParityBuffer.randomFloats(n, -20f, 20f), ParityBuffer.randomFloats(n, -3f, 3f),
					ParityBuffer.output(ElementType.FLOAT, n), ParityBuffer.output(ElementType.FLOAT, n),
					ParityBuffer.output(ElementType.FLOAT, n), ParityBuffer.output(ElementType.FLOAT, n),
					ParityBuffer.output(ElementType.FLOAT, n))
			.check();
	}

	@Test
	void reductionsGiveTheSameBitsInTheKernelsOrder() {
		int n = 10_000_019;
		KernelParity.of(SUM).args(n, ParityBuffer.randomFloats(n), ParityBuffer.output(ElementType.FLOAT, 1)).check();
		KernelParity.of(ROW_MAX).args(1000 * 1001, 1001, ParityBuffer.randomFloats(1000 * 1001),
				ParityBuffer.output(ElementType.FLOAT, 1000)).check();
	}

}
