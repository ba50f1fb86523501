package dev.gpucompute.contract.stream;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The runtime on virtual threads on the CPU backend, which runs on every machine with Java 21+. */
class CpuVirtualThreadContractTests extends VirtualThreadContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
