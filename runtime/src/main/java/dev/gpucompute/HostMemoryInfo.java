package dev.gpucompute;

/**
 * A snapshot of the host memory a context holds for copies ({@link GpuContext#hostMemory()}):
 * page-locked on CUDA, off-heap on the CPU backend. All of it comes from one pool, capped by
 * {@link GpuContext.Builder#stagingCache(long)} for what is kept between uses.
 *
 * @param hostBufferBytes bytes held by {@link HostBuffer}s: open ones, and closed ones whose copies
 * are still pending (their pool blocks, which may be up to 12.5% larger than requested)
 * @param hostBuffers number of those host buffers
 * @param stagingBytes bytes of staging memory held by array and buffer copies in flight
 * @param cachedBytes bytes kept for reuse that nothing uses now
 */
public record HostMemoryInfo(long hostBufferBytes, long hostBuffers, long stagingBytes, long cachedBytes) {
}
