/**
 * What the runtime reports as it works, for metrics: {@link dev.gpucompute.listener.GpuListener}
 * (launches, failures, device times, kernel loads, leases, batches), given to a context by
 * {@code GpuContextBuilder.listener(...)}, and the record of a kernel load it gets,
 * {@link dev.gpucompute.listener.KernelLoad}. The Spring Boot starter implements the listener with
 * Micrometer; applications rarely do. This package depends on nothing else of gpu-compute.
 */
@NullMarked
package dev.gpucompute.listener;

import org.jspecify.annotations.NullMarked;
