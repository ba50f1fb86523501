package dev.gpucompute.contract.copy;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The chunked copy contract on the CPU backend, which runs on every machine. */
class CpuChunkedCopyContractTests extends ChunkedCopyContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		// Enough workers for copies on four streams at once, whatever the machine's core count.
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
