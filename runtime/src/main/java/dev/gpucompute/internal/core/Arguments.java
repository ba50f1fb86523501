package dev.gpucompute.internal.core;

import java.time.Duration;
import java.util.Objects;

/**
 * Argument checks of the runtime's implementation: the same rules and messages as the API's
 * package-private {@code Checks} gives for the same bad input. Two copies because the API depends on
 * no implementation and the rooms cannot reach package-private API; {@code ArgumentChecksTest} keeps
 * them alike.
 */
public final class Arguments {

	/** The longest duration the runtime accepts: what fits in a {@code long} of nanoseconds (about 292 years). */
	public static final Duration MAX_DURATION = Duration.ofNanos(Long.MAX_VALUE);

	private Arguments() {
	}

	/**
	 * {@code value} in nanoseconds.
	 * @throws NullPointerException when it is {@code null}
	 * @throws IllegalArgumentException when it is negative or longer than {@link #MAX_DURATION}
	 */
	public static long nanos(Duration value, String name) {
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
	public static int within(int value, int min, int max, String name) {
		if (value < min || value > max) {
			throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", got " + value);
		}
		return value;
	}

}
