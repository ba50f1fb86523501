package dev.gpucompute.autoconfigure;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;

/**
 * {@code gpu.device} names a device that does not exist on a backend that otherwise works here:
 * the machine has fewer devices than the ordinal implies. Thrown at start-up instead of quietly
 * falling back to another device or to the CPU backend.
 */
public class DeviceOrdinalOutOfRangeException extends BackendUnavailableException {

	private static final long serialVersionUID = 1L;

	private final int ordinal;

	private final int deviceCount;

	/**
	 * @param backend the backend whose devices were counted
	 * @param ordinal the configured ordinal
	 * @param deviceCount how many devices that backend has here (at least 1)
	 */
	public DeviceOrdinalOutOfRangeException(Backend backend, int ordinal, int deviceCount) {
		super(backend, "device ordinal " + ordinal + " is out of range: there " + ((deviceCount == 1) ? "is 1 device"
				: "are " + deviceCount + " devices") + " (ordinals 0 to " + (deviceCount - 1) + ")", null);
		this.ordinal = ordinal;
		this.deviceCount = deviceCount;
	}

	/** The configured ordinal. */
	public int ordinal() {
		return this.ordinal;
	}

	/** How many devices the backend has on this machine. */
	public int deviceCount() {
		return this.deviceCount;
	}

}
