package dev.gpucompute.contract;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The batcher's semantics on the CPU backend, which runs on every machine. */
class CpuBatcherContractTest extends BatcherContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
