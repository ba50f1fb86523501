package dev.gpucompute.autoconfigure.diagnostics;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.origin.Origin;

import dev.gpucompute.autoconfigure.BackendChoice;

/**
 * Explains a {@code gpu.*} property whose value is not one of its allowed values, above all an
 * unknown {@code gpu.backend} (say {@code rocm}): names the value, where it was set (the file and
 * line, as Spring Boot's own analyzers show it) and the values accepted.
 */
class InvalidGpuPropertyValueFailureAnalyzer extends GpuFailureAnalyzer<BindException> {

	@Override
	protected @Nullable FailureAnalysis analyze(Throwable rootFailure, BindException cause) {
		String name = cause.getName().toString();
		Class<?> type = cause.getTarget().getType().resolve();
		if (!name.startsWith("gpu.") || type == null || !type.isEnum()) {
			return null;
		}
		String accepted = Arrays.stream(type.getEnumConstants())
			.map((constant) -> ((Enum<?>) constant).name().toLowerCase(Locale.ROOT).replace('_', '-'))
			.collect(Collectors.joining(", "));
		ConfigurationProperty property = cause.getProperty();
		Object value = (property != null) ? property.getValue() : null;
		// The bound property knows where it was set (file and line, environment variable, argument).
		Origin origin = (property != null) ? property.getOrigin() : Origin.from(cause);
		StringBuilder description = new StringBuilder();
		description.append(name).append(" is set to '").append(value).append("'");
		if (origin != null) {
			description.append(" (").append(origin).append(")");
		}
		description.append(", which is not one of its values: ").append(accepted).append('.');
		String action;
		if (type == BackendChoice.class) {
			description.append(" gpu.backend selects the backend that runs kernels; ROCm/HIP is not supported yet.");
			action = "Set gpu.backend to 'auto' (CUDA when a driver and device are present, otherwise the CPU backend), "
					+ "'cuda' (CUDA only; start-up fails without it) or 'cpu' (the CPU backend, for example in tests).";
		}
		else {
			action = "Set " + name + " to one of: " + accepted + ".";
		}
		return new FailureAnalysis(description.toString(), action, cause);
	}

}
