package dev.gpucompute.contract;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;

/** The bad-input catalogue on the CPU backend, which runs on every machine. */
class CpuBadInputContractTest extends BadInputContractSuite {

	@Override
	protected GpuContext.Builder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
