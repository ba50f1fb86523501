package dev.gpucompute.contract.kernel;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.cuda.CudaTestSupport;

/**
 * The launch contract on the CUDA backend. Skipped with the probe's reason without a
 * device; fails instead when {@code GPU_REQUIRED=1} (as on the GPU machine).
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaLaunchContractTests extends LaunchContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

}
