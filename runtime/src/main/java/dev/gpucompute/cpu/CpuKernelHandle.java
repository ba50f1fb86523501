package dev.gpucompute.cpu;

import dev.gpucompute.KernelSource;
import dev.gpucompute.spi.NativeKernel;

/**
 * A kernel on the CPU backend: its Java implementation, if it has one.
 *
 * @param source the kernel
 * @param loadNanos how long making this handle took: the CPU backend's load step, which waits for
 * nothing, reported like CUDA's module load so that the context applies the same rules
 */
record CpuKernelHandle(KernelSource source, long loadNanos) implements NativeKernel {

	@Override
	public String name() {
		return this.source.name();
	}

}
