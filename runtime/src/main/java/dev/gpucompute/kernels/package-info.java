/**
 * Kernels from files, without Spring: {@link dev.gpucompute.kernels.KernelFiles} reads a directory
 * of {@code .cu}, {@code .ptx}, {@code .cubin} and {@code .fatbin} files (with their {@code .params}
 * sidecars and the prebuilt code beside a {@code .cu}) into {@link dev.gpucompute.KernelSource}s,
 * pairing them with sources given in code, and {@link dev.gpucompute.kernels.LoadedKernels} loads
 * them into one context or several. The Spring starter's {@code gpu.kernels.locations} is this
 * convention with Spring's resource lookup in front ({@link dev.gpucompute.kernels.KernelFile} is
 * the door between the two).
 *
 * <p>Depends on the API ({@code dev.gpucompute}) and {@code dev.gpucompute.spi} only; nothing in
 * the API depends on it.
 */
@NullMarked
package dev.gpucompute.kernels;

import org.jspecify.annotations.NullMarked;
