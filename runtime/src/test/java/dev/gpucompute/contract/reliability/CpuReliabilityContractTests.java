package dev.gpucompute.contract.reliability;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The reliability contract on the CPU backend, which runs on every machine. */
class CpuReliabilityContractTests extends ReliabilityContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
