package dev.gpucompute;

import dev.gpucompute.internal.context.ContextImpl;
import dev.gpucompute.internal.memory.Memory;

/**
 * Lets the tests of the runtime's internal rooms reach a context's rooms, as the context wires
 * them (test sources only).
 */
public final class ContextInternals {

	private ContextInternals() {
	}

	/** The memory room of {@code context}. */
	public static Memory memory(GpuContext context) {
		return ((ContextImpl) context).memoryRoom();
	}

}
