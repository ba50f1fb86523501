package dev.gpucompute.autoconfigure;

import dev.gpucompute.Backend;
import org.jspecify.annotations.Nullable;

/**
 * The values of {@code gpu.backend}: which backend the {@link dev.gpucompute.GpuContext} bean runs
 * on.
 */
public enum BackendChoice {

	/**
	 * CUDA when the driver loads and the configured device exists, otherwise the CPU backend; the
	 * choice and its reason are logged at start-up.
	 */
	AUTO(null),

	/** CUDA only: start-up fails, with the reason, when the driver or the device is missing. */
	CUDA(Backend.CUDA),

	/** The CPU backend, whatever hardware is present (tests, laptops, CI). */
	CPU(Backend.CPU);

	private final @Nullable Backend backend;

	BackendChoice(@Nullable Backend backend) {
		this.backend = backend;
	}

	/** The backend to request from the runtime, or {@code null} to let it choose ({@link #AUTO}). */
	public @Nullable Backend backend() {
		return this.backend;
	}

}
