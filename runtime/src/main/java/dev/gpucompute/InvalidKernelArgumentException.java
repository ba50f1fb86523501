package dev.gpucompute;

/**
 * A launch's arguments do not match the kernel's declared parameters: wrong count, wrong type, a
 * {@code null}, or a null argument array. A subtype of {@link InvalidLaunchConfigException}, which
 * such errors were before, so code that catches that still catches these.
 */
public class InvalidKernelArgumentException extends InvalidLaunchConfigException {

	private static final long serialVersionUID = 1L;

	private final String kernel;

	private final int argumentIndex;

	/**
	 * @param kernel the kernel's name
	 * @param argumentIndex the zero-based index of the bad argument, or -1 when the argument list as a
	 * whole is wrong (count, null array)
	 * @param message what was wrong
	 */
	public InvalidKernelArgumentException(String kernel, int argumentIndex, String message) {
		super(message);
		this.kernel = kernel;
		this.argumentIndex = argumentIndex;
	}

	/** The kernel launched. */
	public String kernel() {
		return this.kernel;
	}

	/** The zero-based index of the bad argument, or -1 when the argument list as a whole is wrong. */
	public int argumentIndex() {
		return this.argumentIndex;
	}

}
