package dev.gpucompute;

import org.jspecify.annotations.Nullable;

/**
 * The requested backend cannot be used on this machine: the driver library is missing, there is
 * no device, or the ordinal is out of range. The message says which.
 */
public class BackendUnavailableException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final Backend backend;

	public BackendUnavailableException(Backend backend, @Nullable String reason, @Nullable Throwable cause) {
		super(backend + " backend is unavailable: " + reason, cause);
		this.backend = backend;
	}

	public Backend backend() {
		return this.backend;
	}

}
