package dev.gpucompute.contract.api;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.cuda.CudaTestSupport;
import dev.gpucompute.GpuContextBuilder;

/**
 * The bad-input catalogue on the CUDA backend. Skipped with the probe's reason without a device;
 * fails instead when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaBadInputContractTests extends BadInputContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

}
