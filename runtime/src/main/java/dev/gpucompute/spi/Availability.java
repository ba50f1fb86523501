package dev.gpucompute.spi;

/**
 * Whether a backend can run here, and why not.
 *
 * @param available whether a device can be opened
 * @param reason why not (driver library missing, no device, ordinal out of range), or a short
 * description of the device when available
 */
public record Availability(boolean available, String reason) {

	public static Availability yes(String description) {
		return new Availability(true, description);
	}

	public static Availability no(String reason) {
		return new Availability(false, reason);
	}

}
