package dev.gpucompute.contract.copy;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The host buffer copy contract on the CPU backend, which runs on every machine. */
class CpuHostBufferCopyContractTests extends HostBufferCopyContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		// Enough workers for a gate kernel that holds one while copies run on the others.
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
