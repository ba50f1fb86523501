package dev.gpucompute;

/**
 * A snapshot of device memory.
 *
 * @param usedBytes bytes held by live {@link DeviceBuffer}s of this context (what they asked for)
 * @param freeBytes bytes the device reports free (all processes), or the CPU budget left
 * @param totalBytes the device's total memory, or the CPU backend's budget
 * @param liveBuffers number of device buffers not yet freed
 * @param cachedBytes bytes this context holds from the device for reuse but no buffer uses (the
 * CUDA backend's caching allocator; 0 on the CPU backend). They count as taken in {@code freeBytes}.
 */
public record MemoryInfo(long usedBytes, long freeBytes, long totalBytes, long liveBuffers, long cachedBytes) {

	/** A snapshot without cached memory. */
	public MemoryInfo(long usedBytes, long freeBytes, long totalBytes, long liveBuffers) {
		this(usedBytes, freeBytes, totalBytes, liveBuffers, 0);
	}

}
