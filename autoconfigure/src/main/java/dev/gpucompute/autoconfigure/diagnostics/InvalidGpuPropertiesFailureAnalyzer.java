package dev.gpucompute.autoconfigure.diagnostics;

import java.util.HashMap;
import java.util.Map;

import org.springframework.boot.context.properties.bind.DataObjectPropertyName;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.context.properties.bind.validation.ValidationErrors;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.origin.Origin;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

import dev.gpucompute.autoconfigure.GpuProperties;

/**
 * Explains {@code gpu.*} values rejected by {@link GpuProperties}' validation: values out of range
 * and, specially, a pool whose up-front size exceeds its maximum.
 */
class InvalidGpuPropertiesFailureAnalyzer extends GpuFailureAnalyzer<BindValidationException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, BindValidationException cause) {
		ValidationErrors errors = cause.getValidationErrors();
		String prefix = errors.getName().toString();
		if (!prefix.equals("gpu") && !prefix.startsWith("gpu.")) {
			return null;
		}
		Map<String, ConfigurationProperty> bound = new HashMap<>();
		for (ConfigurationProperty property : errors.getBoundProperties()) {
			bound.put(property.getName().toString(), property);
		}
		StringBuilder description = new StringBuilder();
		FieldError contradiction = null;
		for (ObjectError error : errors.getAllErrors()) {
			if (error instanceof FieldError field && GpuProperties.CODE_POOL_EXCEEDS_MAX.equals(field.getCode())) {
				contradiction = field;
			}
		}
		String action;
		if (contradiction != null) {
			Object maxSize = (contradiction.getArguments() != null && contradiction.getArguments().length > 0)
					? contradiction.getArguments()[0] : "?";
			description.append("gpu.streams.pool-size (")
				.append(contradiction.getRejectedValue())
				.append(") is larger than gpu.streams.max-size (")
				.append(maxSize)
				.append("): the pool cannot create more streams up front than it may ever hold.");
			action = "Lower gpu.streams.pool-size to at most " + maxSize + ", or raise gpu.streams.max-size to at least "
					+ contradiction.getRejectedValue() + ".";
		}
		else {
			description.append("The GPU configuration has invalid values.");
			action = "Correct the gpu.* properties listed above (see the property descriptions in your IDE or the "
					+ "gpu-compute documentation).";
		}
		description.append("\n\nInvalid properties:");
		for (ObjectError error : errors.getAllErrors()) {
			description.append("\n    ");
			if (error instanceof FieldError field) {
				String name = prefix + "." + dashed(field.getField());
				ConfigurationProperty property = bound.get(name);
				// The configured text ("-1s") reads better than the bound value (PT-1S).
				Object value = (property != null) ? property.getValue() : field.getRejectedValue();
				description.append(name).append(" = ").append(value);
				Origin origin = (property != null) ? property.getOrigin() : Origin.from(field);
				if (origin != null) {
					description.append(" (").append(origin).append(')');
				}
				description.append(": ");
			}
			description.append(error.getDefaultMessage());
		}
		ConfigurationProperty maxSize = bound.get("gpu.streams.max-size");
		if (contradiction != null && maxSize != null) {
			// The other half of the contradiction, with where it was set.
			description.append("\n    gpu.streams.max-size = ").append(maxSize.getValue());
			if (maxSize.getOrigin() != null) {
				description.append(" (").append(maxSize.getOrigin()).append(')');
			}
			description.append(": the maximum that gpu.streams.pool-size exceeds");
		}
		return new FailureAnalysis(description.toString(), action, cause);
	}

	private static String dashed(String field) {
		StringBuilder result = new StringBuilder();
		for (String part : field.split("\\.")) {
			if (!result.isEmpty()) {
				result.append('.');
			}
			result.append(DataObjectPropertyName.toDashedForm(part));
		}
		return result.toString();
	}

}
