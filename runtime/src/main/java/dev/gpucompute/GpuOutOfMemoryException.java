package dev.gpucompute;

/** A device allocation could not be satisfied. */
public class GpuOutOfMemoryException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final long requestedBytes;

	public GpuOutOfMemoryException(long requestedBytes, String message) {
		super("Out of device memory allocating " + requestedBytes + " bytes: " + message);
		this.requestedBytes = requestedBytes;
	}

	public long requestedBytes() {
		return this.requestedBytes;
	}

}
