/**
 * The CUDA backend: the {@code dev.gpucompute.spi} contract implemented on the CUDA driver API
 * through JCuda.
 *
 * <ul>
 * <li>One primary context per device ({@code cuDevicePrimaryCtxRetain}), made current lazily on
 * each calling thread (a thread-local check, so the hot path makes no driver call when it already
 * is) and released when the backend closes.</li>
 * <li>Non-blocking streams with priorities; the default streams are the real
 * {@code CU_STREAM_PER_THREAD} and {@code CU_STREAM_LEGACY} handles, so synchronising them really
 * waits.</li>
 * <li>Kernels from CUDA C (NVRTC, falling back to {@code nvcc -ptx} when JCuda's NVRTC binding
 * cannot load {@code libnvrtc.so.12}), PTX, cubin or fatbin; compiled PTX is cached on disk,
 * keyed by the SHA-256 of source, options, architecture and driver version.</li>
 * <li>The stream-ordered allocator ({@code cuMemAllocAsync}/{@code cuMemFreeAsync}) when the
 * device supports memory pools, page-locked staging buffers for asynchronous copies.</li>
 * <li>{@code CUresult} codes mapped to the {@code GpuException} family; sticky errors (illegal
 * address and friends) mark the backend unhealthy.</li>
 * </ul>
 */
package dev.gpucompute.cuda;
