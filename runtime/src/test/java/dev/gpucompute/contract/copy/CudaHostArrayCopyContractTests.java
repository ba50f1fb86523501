package dev.gpucompute.contract.copy;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.cuda.CudaTestSupport;

/**
 * The array and byte-buffer copy contract on the CUDA backend: chunked copies through page-locked staging. Skipped with the probe's reason without a
 * device; fails instead when {@code GPU_REQUIRED=1} (as on the GPU machine).
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaHostArrayCopyContractTests extends HostArrayCopyContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

}
