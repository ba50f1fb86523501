package dev.gpucompute.spi;

import dev.gpucompute.Backend;
import org.jspecify.annotations.Nullable;

/**
 * Which backend a context opens on, and why: the outcome of {@link Backends#select}.
 *
 * @param backend the backend chosen
 * @param provider its provider, or {@code null} when not on the class path
 * @param availability whether it can run, and why not
 * @param reason the one-line explanation that is logged
 * @param warning whether the choice deserves a warning: {@code auto} fell back to the CPU although
 * CUDA is installed here (a driver or device is present but unusable)
 */
public record BackendSelection(Backend backend, @Nullable BackendProvider provider, Availability availability,
		String reason, boolean warning) {

	/** A selection without a warning. */
	public BackendSelection(Backend backend, @Nullable BackendProvider provider, Availability availability,
			String reason) {
		this(backend, provider, availability, reason, false);
	}

}
