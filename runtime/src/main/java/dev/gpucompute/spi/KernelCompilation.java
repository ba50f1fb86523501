package dev.gpucompute.spi;

import java.nio.file.Path;

import org.jspecify.annotations.Nullable;

/**
 * How a backend turns CUDA C into device code here, and how it has obtained the code of the
 * kernels it loaded so far: what {@link DeviceBackend#kernelCompilation()} answers, for diagnostics
 * and for measuring load routes (the benchmarks' {@code KernelLoadTimes} checks with it that the
 * route it times is the one taken). A snapshot: the counts do not change after it was taken.
 *
 * @param compiler what compiles CUDA C on this machine (for example {@code NVRTC 13.0 ... through
 * JNA}), or {@code none (...)} with why each route is unusable
 * @param compiled kernels compiled from CUDA C by this backend (cache hits not counted)
 * @param cacheHits CUDA C kernels taken from a cache instead of compiled: the disk cache
 * ({@link BackendConfig#kernelCacheDir()}) or the backend's memory
 * @param prebuiltLoads CUDA C kernels loaded from code compiled ahead of time
 * ({@link dev.gpucompute.KernelSource#prebuilt}) instead of compiled
 * @param cacheDir the compiled-kernel cache directory, or {@code null} when there is no disk cache
 */
public record KernelCompilation(String compiler, long compiled, long cacheHits, long prebuiltLoads,
		@Nullable Path cacheDir) {
}
