package dev.gpucompute.test;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.FloatBuffer;

import org.junit.jupiter.api.Test;
import org.opentest4j.AssertionFailedError;

import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;

/**
 * {@link KernelParity#check()} on a GPU: CUDA device 0 against the CPU backend, for saxpy, whose CUDA
 * body NVRTC contracts into one fused multiply-add by default while the Java body rounds the product:
 * within {@link Tolerance#fusedMultiplyAdds}, and bit for bit both ways that make the two round alike
 * ({@code -fmad=false}; {@code fmaf} against {@code Math.fma}). {@code KernelParityTests} reproduces the
 * contracted difference on the CPU. Skipped without a device.
 */
@RequiresCuda
class KernelParityCudaGpuTests {

	/** saxpy with the fused operation written on both sides: one rounding in CUDA and in Java. */
	static final KernelSource SAXPY_FMA = KernelSource.named("saxpy_fma").params(INT, FLOAT, BUFFER, BUFFER)
		.cuda("""
				extern "C" __global__ void saxpy_fma(int n, float a, const float* x, float* y) {
				  int i = blockIdx.x * blockDim.x + threadIdx.x;
				  if (i < n) y[i] = fmaf(a, x[i], y[i]);
				}""")
		.cpu((block, args) -> {
			int n = args.i32(0);
			float a = args.f32(1);
			FloatBuffer x = args.floats(2);
			FloatBuffer y = args.floats(3);
			for (int i = (int) block.firstIndex(); i < block.endIndex(n); i++) {
				y.put(i, Math.fma(a, x.get(i), y.get(i)));
			}
		});

	private static KernelParity saxpy(KernelSource source, int n) {
		return KernelParity.of(source)
			.launch(LaunchConfig.linear(n, 256))
			.args(n, 2.5f, ParityBuffer.randomFloats(n), ParityBuffer.randomFloats(n).compared());
	}

	@Test
	void contractedSaxpyAgreesWithinTheBoundOfOneFusedMultiplyAdd() {
		// KernelParity's Javadoc example (10,000 elements), and the run that failed with ulps(1).
		for (int n : new int[] { 10_000, 100_003 }) {
			ParityReport report = saxpy(KernelParityTests.SAXPY, n).tolerance(Tolerance.fusedMultiplyAdds(1, 3.5)).check();
			System.out.println(report);
		}
	}

	@Test
	void theDefaultBuildContractsSoTheBitsDiffer() {
		// What makes the bound necessary: NVRTC's default -fmad=true fuses a * x + y (the H200 run: 4,658 of
		// 100,003 elements more than one ulp apart). Should a compiler stop contracting, this says so.
		assertThatThrownBy(() -> saxpy(KernelParityTests.SAXPY, 100_003).tolerance(Tolerance.exact()).check())
			.isInstanceOf(AssertionFailedError.class)
			.hasMessageContaining("disagree");
	}

	@Test
	void saxpyCompiledWithoutContractionAgreesBitForBit() {
		ParityReport report = saxpy(KernelParityTests.SAXPY.compileOptions("-fmad=false"), 100_003)
			.tolerance(Tolerance.exact())
			.check();
		// check() throws when they disagree: what is left to see is that every element was compared.
		assertThat(report.buffers()).singleElement()
			.satisfies((buffer) -> assertThat(buffer.count()).isEqualTo(100_003));
	}

	@Test
	void saxpyFusedOnBothSidesAgreesBitForBit() {
		ParityReport report = saxpy(SAXPY_FMA, 100_003).tolerance(Tolerance.exact()).check();
		assertThat(report.buffers()).singleElement()
			.satisfies((buffer) -> assertThat(buffer.count()).isEqualTo(100_003));
	}

}
