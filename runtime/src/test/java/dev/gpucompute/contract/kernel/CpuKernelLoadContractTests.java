package dev.gpucompute.contract.kernel;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The kernel-load rules on the CPU backend, which runs on every machine. */
class CpuKernelLoadContractTests extends KernelLoadContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4).poolSize(2);
	}

}
