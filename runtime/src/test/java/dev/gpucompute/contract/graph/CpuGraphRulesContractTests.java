package dev.gpucompute.contract.graph;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The graph capture rules and ownership on the CPU backend, which runs on every machine. */
class CpuGraphRulesContractTests extends GraphRulesContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(4);
	}

}
