package dev.gpucompute.kernels;

import dev.gpucompute.GpuException;

/**
 * Loading a kernel defined by {@link KernelFiles} failed in the backend (for CUDA C source:
 * compilation), in {@link LoadedKernels#load}. Wraps the backend's exception, usually a
 * {@link dev.gpucompute.KernelCompilationException} with the compiler log, and adds where the
 * kernel came from (the Spring starter's failure analyzer shows both).
 */
public class KernelLoadException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final String kernelName;

	private final String origin;

	/**
	 * @param kernelName the kernel's name
	 * @param origin where the kernel came from (a file, a given source, or both: {@link KernelDefinition#origin()})
	 * @param cause the backend's failure
	 */
	public KernelLoadException(String kernelName, String origin, RuntimeException cause) {
		super("Loading kernel '" + kernelName + "' from " + origin + " failed: " + cause.getMessage(), cause);
		this.kernelName = kernelName;
		this.origin = origin;
	}

	public String kernelName() {
		return this.kernelName;
	}

	/** Where the kernel came from. */
	public String origin() {
		return this.origin;
	}

}
