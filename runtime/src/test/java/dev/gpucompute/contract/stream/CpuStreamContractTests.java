package dev.gpucompute.contract.stream;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The stream and event contract on the CPU backend, which runs on every machine. */
class CpuStreamContractTests extends StreamContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		// Enough workers for two rendezvous kernels plus copies, whatever the machine's core count.
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
