package dev.gpucompute.spi;

import java.nio.file.Path;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * Settings a backend needs when it opens.
 *
 * @param ordinal device ordinal
 * @param cpuThreads worker threads (CPU backend)
 * @param cpuMemoryBudgetBytes the CPU backend's device-memory budget
 * @param memoryPoolReleaseThreshold bytes the stream-ordered allocator keeps cached (CUDA)
 * @param compileOptions extra compiler options for CUDA C
 * @param kernelCacheDir where compiled kernels are cached, or {@code null} for no disk cache
 * @param listener told of every kernel that fails while it runs
 */
public record BackendConfig(int ordinal, int cpuThreads, long cpuMemoryBudgetBytes, long memoryPoolReleaseThreshold,
		List<String> compileOptions, @Nullable Path kernelCacheDir, BackendListener listener) {

	public BackendConfig {
		compileOptions = List.copyOf(compileOptions);
		listener = (listener != null) ? listener : BackendListener.NONE;
	}

	/** Settings without a listener, for backends opened outside a context. */
	public BackendConfig(int ordinal, int cpuThreads, long cpuMemoryBudgetBytes, long memoryPoolReleaseThreshold,
			List<String> compileOptions, @Nullable Path kernelCacheDir) {
		this(ordinal, cpuThreads, cpuMemoryBudgetBytes, memoryPoolReleaseThreshold, compileOptions, kernelCacheDir,
				BackendListener.NONE);
	}

}
