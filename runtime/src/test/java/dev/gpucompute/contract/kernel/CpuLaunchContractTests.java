package dev.gpucompute.contract.kernel;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The launch contract on the CPU backend, which runs on every machine. */
class CpuLaunchContractTests extends LaunchContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		// Enough workers for two rendezvous branches of a group plus copies, whatever the machine's core count.
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
