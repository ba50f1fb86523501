/**
 * The gpu-compute API: what applications write code against. Learn these ten types first, in this
 * order:
 *
 * <ol>
 * <li>{@link dev.gpucompute.GpuContext}: one device, opened once for the application
 * ({@code GpuContext.builder()...open()}, or the starter's bean); it owns everything below.</li>
 * <li>{@link dev.gpucompute.GpuLauncher}: what code injects; loads and launches kernels, allocates
 * device buffers and host buffers, scopes the current stream.</li>
 * <li>{@link dev.gpucompute.KernelSource}: a kernel as CUDA C, PTX or a prebuilt binary, with its
 * parameter types and its CPU implementation ({@link dev.gpucompute.CpuKernel}).</li>
 * <li>{@link dev.gpucompute.LaunchConfig}: the grid and blocks of a launch.</li>
 * <li>{@link dev.gpucompute.DeviceBuffer}: device memory, closed by its owner.</li>
 * <li>{@link dev.gpucompute.HostArray}: the region of a Java array or buffer a copy reads or writes.</li>
 * <li>{@link dev.gpucompute.StreamPool}: leases streams to callers, bounded, with timeouts and
 * priorities.</li>
 * <li>{@link dev.gpucompute.StreamLease}: one leased stream, returned by {@code close()}.</li>
 * <li>{@link dev.gpucompute.GpuStream}: an ordered queue of work; work on different streams may
 * overlap.</li>
 * <li>{@link dev.gpucompute.GpuEvent}: a marker in a stream that other streams, or the host, wait
 * for.</li>
 * </ol>
 *
 * <p>Then, as needed: {@link dev.gpucompute.HostBuffer} (page-locked host memory for fast copies),
 * {@link dev.gpucompute.GpuDevices} (several devices), {@link dev.gpucompute.LeakTracker} (tests),
 * and {@link dev.gpucompute.GpuException} with its subtypes, one per kind of failure. What a type
 * returns as a snapshot is nested in it ({@code StreamPool.PoolStats}, {@code GpuContext.MemoryInfo},
 * {@code EventRegistry.EventStats}).
 *
 * <p>Groups a first-time user does not need have packages of their own: {@code dev.gpucompute.batch}
 * (dynamic batching of small requests onto leased streams), {@code dev.gpucompute.listener} (what the
 * runtime reports, for metrics), {@code dev.gpucompute.settings} (each group of settings with its
 * defaults and limits). {@code dev.gpucompute.spi} is for backends and {@code dev.gpucompute.kernels}
 * for kernel files; the rest ({@code internal}, {@code cpu}, {@code cuda}) is the implementation, which
 * this package never names.
 */
@NullMarked
package dev.gpucompute;

import org.jspecify.annotations.NullMarked;
