package dev.gpucompute;

import java.time.Duration;
import java.util.Objects;

/**
 * Argument checks shared by the public API, so that the same bad input gets the same message
 * everywhere; the implementation's copy is {@code dev.gpucompute.internal.core.Arguments}
 * ({@code ArgumentChecksTest} keeps the two alike).
 */
final class Checks {

	/** The longest duration the runtime accepts: what fits in a {@code long} of nanoseconds (about 292 years). */
	static final Duration MAX_DURATION = Duration.ofNanos(Long.MAX_VALUE);

	private Checks() {
	}

	/**
	 * {@code value} in nanoseconds.
	 * @throws NullPointerException when it is {@code null}
	 * @throws IllegalArgumentException when it is negative or longer than {@link #MAX_DURATION}
	 */
	static long nanos(Duration value, String name) {
		Objects.requireNonNull(value, name);
		if (value.isNegative()) {
			throw new IllegalArgumentException(name + " must not be negative, got " + value);
		}
		if (value.compareTo(MAX_DURATION) > 0) {
			throw new IllegalArgumentException(name + " must be at most " + MAX_DURATION + " (about 292 years), got "
					+ value);
		}
		return value.toNanos();
	}

	/** {@code value} when it is within {@code min..max}, else an {@link IllegalArgumentException} naming the range. */
	static int within(int value, int min, int max, String name) {
		if (value < min || value > max) {
			throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", got " + value);
		}
		return value;
	}

}
