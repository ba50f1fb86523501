package dev.gpucompute.contract.batch;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The batcher's failure reporting on the CPU backend, which runs on every machine. */
class CpuBatcherFailureContractTests extends BatcherFailureContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
