package dev.gpucompute.spi;

/**
 * Whether a backend can run here, and why not.
 *
 * @param available whether a device can be opened
 * @param reason why not (driver library missing, no device, ordinal out of range), or a short
 * description of the device when available
 * @param broken when unavailable: whether the backend's driver or hardware is present but could
 * not be used (a broken installation, as opposed to its plain absence), so that automatic backend
 * selection warns instead of quietly falling back
 */
public record Availability(boolean available, String reason, boolean broken) {

	/** An availability that is not {@link #broken()}. */
	public Availability(boolean available, String reason) {
		this(available, reason, false);
	}

	public static Availability yes(String description) {
		return new Availability(true, description, false);
	}

	/** Unavailable because the backend is absent here (no driver, no device). */
	public static Availability no(String reason) {
		return new Availability(false, reason, false);
	}

	/** Unavailable although its driver or hardware is present: the reason says what is broken. */
	public static Availability broken(String reason) {
		return new Availability(false, reason, true);
	}

}
