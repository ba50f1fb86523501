package dev.gpucompute;

/**
 * A launch was rejected before it reached the driver: bad grid or block dimensions, too many
 * threads per block, too much shared memory, or arguments that do not match the kernel's
 * declared parameters.
 */
public class InvalidLaunchConfigException extends GpuException {

	private static final long serialVersionUID = 1L;

	public InvalidLaunchConfigException(String message) {
		super(message);
	}

}
