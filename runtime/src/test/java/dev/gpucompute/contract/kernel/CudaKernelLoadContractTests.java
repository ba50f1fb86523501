package dev.gpucompute.contract.kernel;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.cuda.CudaTestSupport;
import dev.gpucompute.GpuContextBuilder;

/**
 * The kernel-load rules on the CUDA backend, where a module load really waits for the work in
 * flight. Skipped with the probe's reason without a device; fails instead when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaKernelLoadContractTests extends KernelLoadContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA).poolSize(2);
	}

}
