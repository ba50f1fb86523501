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
 * <li>Kernels from CUDA C (prebuilt code beside the source first, then the disk cache, then NVRTC
 * of any version through JNA, JCuda's NVRTC, nvcc), PTX, cubin or fatbin; compiled code is cached on
 * disk, keyed by the SHA-256 of source, options, architecture and driver version.</li>
 * <li>A stream-aware caching allocator over the stream-ordered allocator ({@code cuMemAllocAsync}/
 * {@code cuMemFreeAsync}, when a trial at open works) or {@code cuMemAlloc}; page-locked staging
 * buffers for asynchronous copies.</li>
 * <li>Completions ({@code whenDone}) through recycled events polled by one thread per backend.</li>
 * <li>{@code CUresult} codes mapped to the {@code GpuException} family; sticky errors (illegal
 * address and friends) mark the backend unhealthy.</li>
 * </ul>
 */
@NullMarked
package dev.gpucompute.cuda;

import org.jspecify.annotations.NullMarked;
