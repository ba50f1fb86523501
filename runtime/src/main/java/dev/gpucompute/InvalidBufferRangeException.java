package dev.gpucompute;

/** A copy or view reaches outside a {@link DeviceBuffer} or a host array. */
public class InvalidBufferRangeException extends GpuException {

	private static final long serialVersionUID = 1L;

	public InvalidBufferRangeException(String message) {
		super(message);
	}

}
