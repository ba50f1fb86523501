package dev.gpucompute.contract.api;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The API-edge contract on the CPU backend, which runs on every machine. */
class CpuApiEdgesContractTests extends ApiEdgesContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
