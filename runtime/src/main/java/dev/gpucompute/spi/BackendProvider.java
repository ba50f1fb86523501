package dev.gpucompute.spi;

import dev.gpucompute.Backend;

/**
 * Opens device backends of one kind. Found by {@link Backends}; implementations must have a public
 * no-argument constructor and must not touch native libraries before {@link #probe} or
 * {@link #open} is called.
 */
public interface BackendProvider {

	Backend backend();

	/**
	 * Whether a device with this ordinal can be opened here. Never throws: a missing driver library,
	 * no device or an ordinal out of range come back as an unavailable result with the reason.
	 */
	Availability probe(int ordinal);

	/**
	 * How many devices this backend can open here (ordinals {@code 0..n-1}); 0 when it cannot run.
	 * Never throws.
	 */
	default int deviceCount() {
		return probe(0).available() ? 1 : 0;
	}

	/**
	 * The memory budget, in bytes, a backend whose device memory is host memory (the CPU backend)
	 * takes when the context sets none, for all the devices it stands in for together; 0 for a
	 * backend with memory of its own. Never throws.
	 */
	default long defaultMemoryBudget() {
		return 0;
	}

	/**
	 * Opens the device.
	 * @throws dev.gpucompute.BackendUnavailableException when it cannot be opened, with the reason
	 */
	DeviceBackend open(BackendConfig config);

}
