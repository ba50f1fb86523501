package dev.gpucompute.contract;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;

/** The reliability contract on the CPU backend, which runs on every machine. */
class CpuReliabilityContractTest extends ReliabilityContractSuite {

	@Override
	protected GpuContext.Builder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
