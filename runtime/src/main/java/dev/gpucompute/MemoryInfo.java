package dev.gpucompute;

/**
 * A snapshot of device memory.
 *
 * @param usedBytes bytes held by live {@link DeviceBuffer}s of this context
 * @param freeBytes bytes the device reports free (all processes), or the CPU budget left
 * @param totalBytes the device's total memory, or the CPU backend's budget
 * @param liveBuffers number of device buffers not yet freed
 */
public record MemoryInfo(long usedBytes, long freeBytes, long totalBytes, long liveBuffers) {
}
