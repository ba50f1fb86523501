/**
 * Spring Boot auto-configuration of gpu-compute: {@link dev.gpucompute.autoconfigure.GpuProperties}
 * ({@code gpu.*}), the {@link dev.gpucompute.autoconfigure.GpuAutoConfiguration} beans and the
 * {@link dev.gpucompute.autoconfigure.GpuLifecycle} that drains the GPU at shutdown. Sub-packages:
 * {@code kernels} (kernels loaded at start-up), {@code diagnostics} (failure analyzers),
 * {@code metrics} and {@code actuate} (observability), {@code test} (test support).
 */
@NullMarked
package dev.gpucompute.autoconfigure;

import org.jspecify.annotations.NullMarked;
