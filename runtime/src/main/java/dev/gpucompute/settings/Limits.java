package dev.gpucompute.settings;

import java.time.Duration;
import java.util.Objects;

/**
 * The one set of checks that settings, and the durations and counts the API's methods take, go
 * through, so that the same bad value gets the same rule and message wherever it is given: a value
 * outside its limits raises an {@link InvalidSettingException} naming it, a missing one a
 * {@link NullPointerException} naming it. Stateless; the methods return the value they checked.
 */
public final class Limits {

	/** The longest duration the runtime accepts: what fits in a {@code long} of nanoseconds (about 292 years). */
	public static final Duration MAX_DURATION = Duration.ofNanos(Long.MAX_VALUE);

	private Limits() {
	}

	/**
	 * {@code value} in nanoseconds.
	 * @throws NullPointerException when it is {@code null}
	 * @throws InvalidSettingException when it is negative or longer than {@link #MAX_DURATION}
	 */
	public static long nanos(Duration value, String name) {
		Objects.requireNonNull(value, name);
		if (value.isNegative()) {
			throw new InvalidSettingException(name, InvalidSettingException.Problem.NEGATIVE, Duration.ZERO,
					name + " must not be negative, got " + value);
		}
		if (value.compareTo(MAX_DURATION) > 0) {
			throw new InvalidSettingException(name, InvalidSettingException.Problem.TOO_LARGE, MAX_DURATION,
					name + " must be at most " + MAX_DURATION + " (about 292 years), got " + value);
		}
		return value.toNanos();
	}

	/**
	 * {@code value} when it is within {@code min..max}.
	 * @throws InvalidSettingException naming the range when it is not
	 */
	public static int within(int value, int min, int max, String name) {
		if (value < min || value > max) {
			throw new InvalidSettingException(name,
					(value < min) ? InvalidSettingException.Problem.TOO_SMALL : InvalidSettingException.Problem.TOO_LARGE,
					(value < min) ? min : max, name + " must be between " + min + " and " + max + ", got " + value);
		}
		return value;
	}

	/**
	 * {@code value} when it is not negative.
	 * @throws InvalidSettingException when it is
	 */
	public static long notNegative(long value, String name) {
		if (value < 0) {
			throw new InvalidSettingException(name, InvalidSettingException.Problem.NEGATIVE, 0L,
					name + " must not be negative, got " + value);
		}
		return value;
	}

	/**
	 * {@code value} when it is positive.
	 * @throws InvalidSettingException when it is not
	 */
	public static long positive(long value, String name) {
		if (value < 1) {
			throw new InvalidSettingException(name, InvalidSettingException.Problem.TOO_SMALL, 1L,
					name + " must be positive, got " + value);
		}
		return value;
	}

	/**
	 * {@code value} when it is at least {@code min} ({@code unit} follows the numbers in the message:
	 * "bytes", or empty).
	 * @throws InvalidSettingException when it is smaller
	 */
	public static long atLeast(long value, long min, String unit, String name) {
		if (value < min) {
			String suffix = unit.isEmpty() ? "" : " " + unit;
			throw new InvalidSettingException(name, InvalidSettingException.Problem.TOO_SMALL, min,
					name + " must be at least " + min + suffix + ", got " + value);
		}
		return value;
	}

	/**
	 * {@code value} when it is {@code other}'s value or less ({@code otherName} says which setting that is).
	 * @throws InvalidSettingException when it is larger
	 */
	public static long notAbove(long value, String name, long other, String otherName) {
		if (value > other) {
			throw new InvalidSettingException(name, InvalidSettingException.Problem.EXCEEDS, other,
					name + " (" + value + ") must not exceed " + otherName + " (" + other + ")");
		}
		return value;
	}

}
