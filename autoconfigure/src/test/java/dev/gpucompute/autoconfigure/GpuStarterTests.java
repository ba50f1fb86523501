package dev.gpucompute.autoconfigure;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;

/**
 * {@code GpuStarterCudaGpuTests}'s backend-neutral checks ({@link GpuStarterChecks}) on the CPU
 * backend, in CI: the GPU-only test cannot drift from the meters, health details and memory figures
 * without this failing too.
 */
class GpuStarterTests {

	@Test
	void healthIsUpAndTheMetersFollowTheDeviceOnTheCpuBackend() {
		GpuStarterChecks.runner("cpu")
			.run((context) -> GpuStarterChecks.healthIsUpAndTheMetersFollowTheDevice(context, Backend.CPU));
	}

}
