package dev.gpucompute;

/**
 * A stream, event, buffer or kernel was used after its {@link GpuContext} closed, or a handle from
 * one context was handed to another.
 */
public class ContextClosedException extends GpuException {

	private static final long serialVersionUID = 1L;

	public ContextClosedException(String message) {
		super(message);
	}

}
