package dev.gpucompute.contract.batch;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/**
 * The batcher's queue (back-pressure, deadlines, cancellation, bad input) on the CPU backend, which
 * runs on every machine.
 */
class CpuBatcherQueueContractTests extends BatcherQueueContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
