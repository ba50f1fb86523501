package dev.gpucompute.autoconfigure;

import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.origin.Origin;

/**
 * Keys under {@code gpu.} that no gpu-compute property binds, found at start-up with
 * {@code gpu.unknown-properties=fail} (the default). Each comes with where it was set and the nearest
 * known key, for the failure report.
 */
public class UnknownGpuPropertiesException extends IllegalStateException {

	private static final long serialVersionUID = 1L;

	private final transient List<UnknownProperty> properties;

	/**
	 * Unknown keys.
	 * @param properties the unknown keys, at least one
	 */
	public UnknownGpuPropertiesException(List<UnknownProperty> properties) {
		super("Unknown gpu.* properties: "
				+ String.join(", ", properties.stream().map(UnknownProperty::toString).toList()));
		this.properties = List.copyOf(properties);
	}

	/** The unknown keys, in the order of their names. */
	public List<UnknownProperty> properties() {
		return this.properties;
	}

	/**
	 * One key that nothing binds.
	 *
	 * @param name the key in canonical form ({@code gpu.streams.max-sise})
	 * @param value the value it was given
	 * @param origin where it was set, or {@code null} when its source records none
	 * @param suggestion the nearest known key, or {@code null} when none is near
	 */
	public record UnknownProperty(String name, Object value, @Nullable Origin origin, @Nullable String suggestion) {

		@Override
		public String toString() {
			StringBuilder text = new StringBuilder(this.name).append(" = ").append(this.value);
			if (this.origin != null) {
				text.append(" (").append(this.origin).append(')');
			}
			if (this.suggestion != null) {
				text.append(": did you mean ").append(this.suggestion).append('?');
			}
			return text.toString();
		}

	}

}
