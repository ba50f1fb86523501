package dev.gpucompute.cuda;

import dev.gpucompute.spi.NativeKernel;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/** A kernel loaded into the backend's context: its module and function handle. */
final class CudaKernel implements NativeKernel {

	final CudaDeviceBackend backend;

	private final String name;

	final CUmodule module;

	final CUfunction function;

	/** How the kernel's code was obtained, for messages: NVRTC, nvcc, cache, PTX, cubin, fatbin. */
	final String origin;

	/** Its static shared memory ({@code __shared__} arrays), which counts against the per-block limit too. */
	final int staticSharedBytes;

	/** The dynamic shared memory it may use now (raised on demand at launch, see {@link SharedMemoryOptIn}). */
	volatile int dynamicSharedLimit;

	/** How long the driver's module loads for it took ({@code cuModuleLoadDataEx}), compilation excluded. */
	private final long loadNanos;

	CudaKernel(CudaDeviceBackend backend, String name, CUmodule module, CUfunction function, String origin,
			int staticSharedBytes, int dynamicSharedLimit, long loadNanos) {
		this.backend = backend;
		this.name = name;
		this.module = module;
		this.function = function;
		this.origin = origin;
		this.staticSharedBytes = staticSharedBytes;
		this.dynamicSharedLimit = dynamicSharedLimit;
		this.loadNanos = loadNanos;
	}

	@Override
	public long loadNanos() {
		return this.loadNanos;
	}

	@Override
	public String name() {
		return this.name;
	}

	@Override
	public String toString() {
		return "CudaKernel[" + this.name + ", from " + this.origin + "]";
	}

}
