package dev.gpucompute.contract.copy;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The array and byte-buffer copy contract on the CPU backend, which runs on every machine. */
class CpuHostArrayCopyContractTests extends HostArrayCopyContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		// The same four workers as the other copy suites, whatever the machine's core count.
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
