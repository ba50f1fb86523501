/**
 * Kernels loaded at start-up: kernel files under {@code gpu.kernels.locations} paired with
 * {@link dev.gpucompute.KernelSource} beans. See {@link dev.gpucompute.autoconfigure.kernels.GpuKernels}
 * for the convention.
 */
package dev.gpucompute.autoconfigure.kernels;
