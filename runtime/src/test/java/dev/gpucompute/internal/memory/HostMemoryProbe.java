package dev.gpucompute.internal.memory;

import dev.gpucompute.ContextInternals;
import dev.gpucompute.GpuContext;

/**
 * Lets suites outside the memory room see how a context's close treated its host memory (test
 * sources only).
 */
public final class HostMemoryProbe {

	private HostMemoryProbe() {
	}

	/**
	 * Whether the close of {@code context} left its page-locked (CUDA) or direct (CPU) blocks to the
	 * process instead of freeing them: what it does when it abandons work the device may still run.
	 */
	public static boolean blocksLeftToProcess(GpuContext context) {
		return ContextInternals.memory(context).host.pool.leftToProcess();
	}

}
