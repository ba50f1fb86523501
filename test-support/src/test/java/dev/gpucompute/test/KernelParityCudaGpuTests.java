package dev.gpucompute.test;

import org.junit.jupiter.api.Test;

import dev.gpucompute.LaunchConfig;

/** {@link KernelParity#check()} on a GPU: CUDA device 0 against the CPU backend. Skipped here (no device). */
@RequiresCuda
class KernelParityCudaGpuTests {

	@Test
	void saxpyBodiesAgreeWithinOneUlp() {
		int n = 100_003;
		ParityReport report = KernelParity.of(KernelParityTests.SAXPY)
			.launch(LaunchConfig.linear(n, 256))
			.args(n, 2.5f, ParityBuffer.randomFloats(n), ParityBuffer.randomFloats(n).compared())
			.tolerance(Tolerance.ulps(1)) // NVRTC may fuse a * x + y into one FMA, which rounds once
			.check();
		System.out.println(report);
	}

}
