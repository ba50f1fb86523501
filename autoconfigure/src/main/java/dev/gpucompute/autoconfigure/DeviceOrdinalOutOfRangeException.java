package dev.gpucompute.autoconfigure;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.origin.Origin;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;

/**
 * {@code gpu.device} or {@code gpu.devices} names a device that does not exist on a backend that
 * otherwise works here: the machine has fewer devices than the ordinal implies (or, on the CPU
 * backend, {@code gpu.cpu.devices} is lower). Thrown at start-up instead of quietly falling back to
 * another device or to the CPU backend.
 */
public class DeviceOrdinalOutOfRangeException extends BackendUnavailableException {

	private static final long serialVersionUID = 1L;

	private final String property;

	private final int ordinal;

	private final int deviceCount;

	private final transient @Nullable Origin origin;

	/**
	 * An ordinal of {@code gpu.device} out of range.
	 * @param backend the backend whose devices were counted
	 * @param ordinal the configured ordinal
	 * @param deviceCount how many devices that backend has here (at least 1)
	 */
	public DeviceOrdinalOutOfRangeException(Backend backend, int ordinal, int deviceCount) {
		this(backend, "gpu.device", ordinal, deviceCount, null);
	}

	/**
	 * An ordinal of a property out of range.
	 * @param backend the backend whose devices were counted
	 * @param property the property that names the device: {@code gpu.device} or {@code gpu.devices}
	 * @param ordinal the configured ordinal
	 * @param deviceCount how many devices that backend has here (at least 1)
	 * @param origin where the property was set, or {@code null} when unknown
	 */
	public DeviceOrdinalOutOfRangeException(Backend backend, @Nullable String property, int ordinal, int deviceCount,
			@Nullable Origin origin) {
		super(backend, "device ordinal " + ordinal + ((property != null) ? " (" + property + ")" : "")
				+ " is out of range: there " + ((deviceCount == 1) ? "is 1 device" : "are " + deviceCount + " devices")
				+ " (ordinals 0 to " + (deviceCount - 1) + ")", null);
		this.property = (property != null) ? property : "gpu.device";
		this.ordinal = ordinal;
		this.deviceCount = deviceCount;
		this.origin = origin;
	}

	/** The property that names the device: {@code gpu.device} or {@code gpu.devices}. */
	public String property() {
		return this.property;
	}

	/** The configured ordinal. */
	public int ordinal() {
		return this.ordinal;
	}

	/** How many devices the backend has on this machine. */
	public int deviceCount() {
		return this.deviceCount;
	}

	/** Where the property was set, or {@code null} when unknown. */
	public @Nullable Origin origin() {
		return this.origin;
	}

}
