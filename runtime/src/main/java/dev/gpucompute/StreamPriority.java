package dev.gpucompute;

/**
 * Scheduling priority of a pooled stream. On CUDA, {@code HIGH} maps to the greatest priority of
 * {@code cuCtxGetStreamPriorityRange} and {@code NORMAL} to the default; the CPU backend runs
 * high-priority work first when workers are contended.
 */
public enum StreamPriority {

	NORMAL, HIGH

}
