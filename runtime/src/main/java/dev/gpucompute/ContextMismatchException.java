package dev.gpucompute;

/**
 * A stream, event, buffer or kernel of one {@link GpuContext} was handed to another, open one. Handles
 * are never routed between contexts (each device has its own memory, streams and modules): copy data
 * between contexts through the host, or use the handles of the context you launch into.
 */
public class ContextMismatchException extends GpuException {

	private static final long serialVersionUID = 1L;

	public ContextMismatchException(String message) {
		super(message);
	}

}
