package dev.gpucompute.autoconfigure.kernels;

import dev.gpucompute.GpuException;

/**
 * A kernel found at start-up is not fully defined: its parameter types cannot be determined, its
 * file name is not a kernel name, or two definitions of the same kernel disagree. Fails start-up;
 * the message says which kernel, where it came from and what is wrong.
 */
public class KernelDefinitionException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final String kernelName;

	private final String origin;

	private final String problem;

	/**
	 * @param kernelName the kernel's name
	 * @param origin where the kernel was found (a resource description or a bean name)
	 * @param problem what is wrong, as a sentence fragment
	 * @param cause the underlying failure, if any
	 */
	public KernelDefinitionException(String kernelName, String origin, String problem, Throwable cause) {
		super("Kernel '" + kernelName + "' (" + origin + "): " + problem, cause);
		this.kernelName = kernelName;
		this.origin = origin;
		this.problem = problem;
	}

	public String kernelName() {
		return this.kernelName;
	}

	/** Where the kernel was found: a resource description or a bean name. */
	public String origin() {
		return this.origin;
	}

	/** What is wrong with the definition. */
	public String problem() {
		return this.problem;
	}

}
