package dev.gpucompute.cuda;

import dev.gpucompute.spi.NativeKernel;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/** A kernel loaded into the backend's context: its module and function handle. */
final class CudaKernel implements NativeKernel {

	/** Dynamic shared memory a kernel may use without opting in ({@code cudaFuncSetAttribute}). */
	static final int DEFAULT_DYNAMIC_SHARED_LIMIT = 48 * 1024;

	final CudaDeviceBackend backend;

	private final String name;

	final CUmodule module;

	final CUfunction function;

	/** How the kernel's code was obtained, for messages: NVRTC, nvcc, cache, PTX, cubin, fatbin. */
	final String origin;

	/** The dynamic shared memory this function was opted in to (raised on demand at launch). */
	volatile int dynamicSharedLimit = DEFAULT_DYNAMIC_SHARED_LIMIT;

	CudaKernel(CudaDeviceBackend backend, String name, CUmodule module, CUfunction function, String origin) {
		this.backend = backend;
		this.name = name;
		this.module = module;
		this.function = function;
		this.origin = origin;
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
