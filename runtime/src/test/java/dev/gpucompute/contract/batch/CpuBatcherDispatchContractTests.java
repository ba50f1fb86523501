package dev.gpucompute.contract.batch;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/**
 * The batcher's dispatch (forming batches, continuous batching, {@code call}) on the CPU backend,
 * which runs on every machine.
 */
class CpuBatcherDispatchContractTests extends BatcherDispatchContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
