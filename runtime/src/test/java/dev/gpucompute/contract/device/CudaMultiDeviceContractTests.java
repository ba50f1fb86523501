package dev.gpucompute.contract.device;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.cuda.CudaTestSupport;
import dev.gpucompute.GpuContextBuilder;

/**
 * The multi-device contract on every GPU of the machine. Skipped with the probe's reason without a
 * device; the tests that need two devices skip on a one-GPU machine, saying so.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaMultiDeviceContractTests extends MultiDeviceContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

}
