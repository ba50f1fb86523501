package dev.gpucompute;

/**
 * A snapshot of the host memory a context holds for copies ({@link GpuContext#hostMemory()}):
 * page-locked on CUDA, off-heap on the CPU backend. All of it comes from one pool, capped by
 * {@link GpuContextBuilder#stagingCache(long)} for what is kept between uses. The staging that
 * array and buffer copies hold at once is bounded by {@link GpuContextBuilder#stagingBudget(long)};
 * host buffers are not.
 *
 * @param hostBufferBytes bytes held by {@link HostBuffer}s: open ones, and closed ones whose copies
 * are still pending (their pool blocks, which may be up to 12.5% larger than requested)
 * @param hostBuffers number of those host buffers
 * @param stagingBytes bytes of staging memory held by array and buffer copies in flight (their
 * blocks' sizes); at most {@code stagingBudgetBytes}
 * @param cachedBytes bytes kept for reuse that nothing uses now
 * @param stagingBudgetBytes the most staging copies may hold at once
 * @param stagingPeakBytes the most {@code stagingBytes} has been since the context opened
 * @param stagingWaiting copies waiting now for room in the staging budget
 * @param stagingTimeouts copies that gave up waiting for staging ({@link StagingExhaustedException})
 * since the context opened
 */
public record HostMemoryInfo(long hostBufferBytes, long hostBuffers, long stagingBytes, long cachedBytes,
		long stagingBudgetBytes, long stagingPeakBytes, int stagingWaiting, long stagingTimeouts) {
}
