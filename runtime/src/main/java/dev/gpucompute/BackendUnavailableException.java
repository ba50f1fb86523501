package dev.gpucompute;

/**
 * The requested backend cannot be used on this machine: the driver library is missing, there is
 * no device, or the ordinal is out of range. The message says which.
 */
public class BackendUnavailableException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final Backend backend;

	public BackendUnavailableException(Backend backend, String reason, Throwable cause) {
		super(backend + " backend is unavailable: " + reason, cause);
		this.backend = backend;
	}

	public Backend backend() {
		return this.backend;
	}

}
