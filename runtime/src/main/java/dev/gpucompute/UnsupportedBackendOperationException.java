package dev.gpucompute;

/**
 * The operation cannot be done on this backend, for example a kernel without a CPU implementation
 * launched on the CPU backend.
 */
public class UnsupportedBackendOperationException extends GpuException {

	private static final long serialVersionUID = 1L;

	public UnsupportedBackendOperationException(String message) {
		super(message);
	}

}
