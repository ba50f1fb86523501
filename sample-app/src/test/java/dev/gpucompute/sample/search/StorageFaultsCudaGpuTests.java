package dev.gpucompute.sample.search;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.sample.RequiresCuda;

/**
 * {@link RefusedWriteSuite} on a CUDA device. Skipped without a device; failed when
 * {@code GPU_REQUIRED=1}. {@link StorageFaultsCpuTests} runs the same checks in CI.
 */
@Tag("gpu")
@ExtendWith(RequiresCuda.class)
class StorageFaultsCudaGpuTests extends RefusedWriteSuite {

	@Override
	Backend backend() {
		return Backend.CUDA;
	}

}
