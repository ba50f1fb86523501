package dev.gpucompute.contract.pool;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The pool's order of service on the CPU backend, which runs on every machine. */
class CpuPoolPriorityContractTests extends PoolPriorityContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2);
	}

}
