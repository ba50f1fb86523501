package dev.gpucompute.settings;

import java.time.Duration;

/**
 * How a context closes ({@code gpu.shutdown.*} in the Spring Boot starter): defaults and checks, held
 * here once. Immutable; checked when made.
 *
 * @param drainTimeout longest wait at close for queued batches and the work in flight; work still
 * pending then is abandoned (its futures fail with {@code ContextClosedException})
 */
public record ShutdownSettings(Duration drainTimeout) {

	/** Longest wait at close unless set. */
	public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);

	/** The runtime's defaults: a 30 s drain. */
	public static final ShutdownSettings DEFAULTS = new ShutdownSettings(DEFAULT_DRAIN_TIMEOUT);

	/**
	 * Checks the value.
	 * @throws NullPointerException when it is missing
	 * @throws InvalidSettingException when it is negative
	 */
	public ShutdownSettings {
		Limits.nanos(drainTimeout, "drainTimeout");
	}

}
