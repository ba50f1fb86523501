package dev.gpucompute.contract.api;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The bad-input catalogue on the CPU backend, which runs on every machine. */
class CpuBadInputContractTests extends BadInputContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
