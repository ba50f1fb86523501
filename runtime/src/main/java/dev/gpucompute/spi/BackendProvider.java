package dev.gpucompute.spi;

import dev.gpucompute.Backend;
import org.jspecify.annotations.Nullable;

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

	/**
	 * What the application must add for this backend to load here, as a sentence that names it (for
	 * CUDA: JCuda's native libraries for this platform, which the starter leaves to the application,
	 * with their Maven coordinates), or {@code null} when nothing is missing or the backend cannot
	 * tell. Answers from the class path alone: loads no native library, needs no device, never
	 * throws, so start-up logs and failure reports can ask before or instead of {@link #probe}.
	 */
	default @Nullable String missingDependency() {
		return null;
	}

}
