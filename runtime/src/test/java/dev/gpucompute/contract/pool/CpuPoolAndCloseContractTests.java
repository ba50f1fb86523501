package dev.gpucompute.contract.pool;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The pool and close contract on the CPU backend, which runs on every machine. */
class CpuPoolAndCloseContractTests extends PoolAndCloseContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		// Enough workers for the four kernels that close drains, whatever the machine's core count.
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
