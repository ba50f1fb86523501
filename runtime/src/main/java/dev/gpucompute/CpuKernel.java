package dev.gpucompute;

/**
 * The Java implementation of a kernel for the CPU backend. Called once per block, blocks spread
 * over the backend's worker threads; so an implementation must be safe to run concurrently for
 * different blocks, exactly like a CUDA kernel.
 */
@FunctionalInterface
public interface CpuKernel {

	/**
	 * Runs one block.
	 * @param block the block's coordinates; only valid during this call (it is reused)
	 * @param args typed access to the launch arguments; only valid during this call. Every block of
	 * one launch gets the same instance and every launch its own, so an implementation may key
	 * per-worker caches of what a launch reads by its identity (weakly held)
	 */
	void run(KernelBlock block, KernelArgs args);

}
