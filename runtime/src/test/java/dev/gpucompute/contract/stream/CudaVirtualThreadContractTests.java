package dev.gpucompute.contract.stream;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.cuda.CudaTestSupport;

/**
 * The runtime on virtual threads on the CUDA backend, where a virtual thread's default stream is the
 * legacy stream (docs/runtime.md, "Virtual threads"). Needs a device and Java 21+: skipped with the
 * reason otherwise; without a device it fails instead when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaVirtualThreadContractTests extends VirtualThreadContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

}
