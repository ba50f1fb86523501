package dev.gpucompute.contract.pool;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.cuda.CudaTestSupport;
import dev.gpucompute.GpuContextBuilder;

/**
 * The pool's order of service on the CUDA backend (high-priority streams are CUDA stream
 * priorities there). Skipped with the probe's reason without a device; fails instead when
 * {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaPoolPriorityContractTests extends PoolPriorityContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

}
