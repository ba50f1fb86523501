package dev.gpucompute;

import org.jspecify.annotations.Nullable;

/**
 * Root of every failure the runtime reports. Unchecked, so that launch code reads like ordinary
 * Java; callers that care catch the subtype that names the failure.
 */
public class GpuException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public GpuException(@Nullable String message) {
		super(message);
	}

	public GpuException(String message, @Nullable Throwable cause) {
		super(message, cause);
	}

}
