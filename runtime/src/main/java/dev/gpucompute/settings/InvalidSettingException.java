package dev.gpucompute.settings;

import org.jspecify.annotations.Nullable;

/**
 * A setting (or a duration or count given to an API method) outside its limits, saying which one,
 * what is wrong and the limit it broke: what the settings records, the context builder and the
 * runtime's methods throw, through {@link Limits}. An {@link IllegalArgumentException}, so code that
 * catches that keeps working; the Spring Boot starter reads {@link #setting()}, {@link #problem()}
 * and {@link #limit()} to report the property that was set, instead of parsing the message.
 */
public class InvalidSettingException extends IllegalArgumentException {

	private static final long serialVersionUID = 1L;

	/** What is wrong with the value. */
	public enum Problem {

		/** Below its smallest value ({@link #limit()}: that value). */
		TOO_SMALL,

		/** Above its largest value ({@link #limit()}: that value). */
		TOO_LARGE,

		/** A negative duration or amount where zero is the least ({@link #limit()}: 0). */
		NEGATIVE,

		/** Not a whole multiple of a unit ({@link #limit()}: the unit). */
		NOT_A_MULTIPLE,

		/**
		 * Larger than another setting it must not exceed ({@link #limit()}: that setting's value), such
		 * as a pool size above the pool's maximum.
		 */
		EXCEEDS,

		/** Not of the required form, such as a name with characters names may not have. */
		MALFORMED

	}

	private final String setting;

	private final Problem problem;

	private final transient @Nullable Object limit;

	/**
	 * @param setting the name of the setting as it is set in code (a builder method: {@code maxSize})
	 * @param problem what is wrong
	 * @param limit the limit it broke (see {@link Problem}), or {@code null}
	 * @param message the whole message, naming the setting, the limit and the value
	 */
	public InvalidSettingException(String setting, Problem problem, @Nullable Object limit, String message) {
		super(message);
		this.setting = setting;
		this.problem = problem;
		this.limit = limit;
	}

	/** The setting's name as it is set in code: a builder method's name ({@code acquireTimeout}). */
	public String setting() {
		return this.setting;
	}

	/** What is wrong with the value. */
	public Problem problem() {
		return this.problem;
	}

	/** The limit the value broke (see {@link Problem}), or {@code null}. */
	public @Nullable Object limit() {
		return this.limit;
	}

}
