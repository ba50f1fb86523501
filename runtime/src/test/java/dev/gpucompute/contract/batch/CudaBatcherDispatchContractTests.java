package dev.gpucompute.contract.batch;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.cuda.CudaTestSupport;
import dev.gpucompute.GpuContextBuilder;

/**
 * The batcher's dispatch (forming batches, continuous batching, {@code call}) on the CUDA backend:
 * its batches launch the contract kernels on CUDA streams. Skipped with the probe's reason without
 * a device; fails instead when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaBatcherDispatchContractTests extends BatcherDispatchContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

}
