/**
 * Kernels loaded at start-up: kernel files under {@code gpu.kernels.locations} paired with
 * {@link dev.gpucompute.KernelSource} beans. The convention (names, parameter types, {@code .params}
 * files, prebuilt code) and the loading are the runtime's {@code dev.gpucompute.kernels}; this package
 * is Spring's part: it resolves the locations as Spring resources. See
 * {@link dev.gpucompute.autoconfigure.kernels.GpuKernels}.
 */
@NullMarked
package dev.gpucompute.autoconfigure.kernels;

import org.jspecify.annotations.NullMarked;
