package dev.gpucompute.spi;

import dev.gpucompute.GpuException;

/**
 * What a backend tells its context about work that failed while it ran, so that every failure is
 * counted however (and whether) it is observed later. Given to the backend in
 * {@link BackendConfig#listener()}.
 */
public interface BackendListener {

	/** A listener that ignores everything (backends opened outside a context, tests). */
	BackendListener NONE = (kernel, failure) -> {
	};

	/**
	 * A kernel failed after its launch was accepted. Called once per failure, on the thread that
	 * found it (a worker or driver thread); must be quick, must not throw and must not call into the
	 * backend.
	 * @param kernel the kernel's name
	 * @param failure the failure as it will be reported to the work that depends on it
	 */
	void kernelFailed(String kernel, GpuException failure);

}
