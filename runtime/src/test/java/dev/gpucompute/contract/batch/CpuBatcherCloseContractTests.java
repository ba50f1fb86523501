package dev.gpucompute.contract.batch;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The batcher's close and drain on the CPU backend, which runs on every machine. */
class CpuBatcherCloseContractTests extends BatcherCloseContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
