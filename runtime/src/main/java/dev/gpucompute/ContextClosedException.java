package dev.gpucompute;

import org.jspecify.annotations.Nullable;

/**
 * A stream, event, buffer or kernel was used after its {@link GpuContext} closed (or began to close),
 * or work was abandoned at close: pending when the drain timeout passed, its futures complete
 * exceptionally with this exception, whose message says so. A handle of another, open context is a
 * {@link ContextMismatchException} instead.
 */
public class ContextClosedException extends GpuException {

	private static final long serialVersionUID = 1L;

	public ContextClosedException(@Nullable String message) {
		super(message);
	}

}
