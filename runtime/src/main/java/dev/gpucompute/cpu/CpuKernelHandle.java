package dev.gpucompute.cpu;

import dev.gpucompute.KernelSource;
import dev.gpucompute.spi.NativeKernel;

/** A kernel on the CPU backend: its Java implementation, if it has one. */
record CpuKernelHandle(KernelSource source) implements NativeKernel {

	@Override
	public String name() {
		return this.source.name();
	}

}
