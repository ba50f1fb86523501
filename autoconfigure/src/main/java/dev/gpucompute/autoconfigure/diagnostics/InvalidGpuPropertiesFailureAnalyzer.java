package dev.gpucompute.autoconfigure.diagnostics;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.DataObjectPropertyName;
import org.springframework.boot.context.properties.bind.validation.BindValidationException;
import org.springframework.boot.context.properties.bind.validation.ValidationErrors;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.origin.Origin;
import org.springframework.validation.FieldError;
import org.springframework.validation.ObjectError;

import dev.gpucompute.autoconfigure.GpuProperties;
import dev.gpucompute.autoconfigure.GpuPropertiesValidator;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.settings.CpuSettings;

/**
 * Explains {@code gpu.*} values rejected by {@link GpuProperties}' validation: values out of range
 * and, specially, a pool whose up-front size exceeds its maximum, and a {@code gpu.devices} that is
 * neither {@code all} nor a list of distinct ordinals or leaves out the {@code gpu.device} it should
 * hold, and batcher settings ({@code gpu.batching.<name>.*}) out of range. Each value is shown with where it was set (for a list, where its first element was).
 */
class InvalidGpuPropertiesFailureAnalyzer extends GpuFailureAnalyzer<BindValidationException> {

	@Override
	protected @Nullable FailureAnalysis analyze(Throwable rootFailure, BindValidationException cause) {
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
			if (error instanceof FieldError field && GpuPropertiesValidator.CODE_POOL_EXCEEDS_MAX.equals(field.getCode())) {
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
			if (hasCode(errors, GpuPropertiesValidator.CODE_INVALID_DEVICES)) {
				action += " Set gpu.devices to 'all' (every device of the backend) or to distinct device ordinals such "
						+ "as 0,1,2; remove it to open the one device gpu.device names.";
			}
			if (hasCode(errors, GpuPropertiesValidator.CODE_DEVICE_NOT_LISTED)) {
				action += " gpu.device names the primary device among gpu.devices: add it to gpu.devices, or remove "
						+ "gpu.device to make the first device listed the primary one.";
			}
			if (errors.getAllErrors().stream().anyMatch((error) -> error instanceof FieldError field
					&& field.getField().startsWith("batching"))) {
				action += " gpu.batching.<name>.* configures the batcher that GpuBatchers.create(name, ...) builds: "
						+ "max-batch-size 1 to " + GpuBatcher.Settings.MAX_BATCH_SIZE + ", max-queued at least 1, "
						+ "max-concurrent-batches 1 to the streams the pool can lease at the batcher's priority "
						+ "(gpu.streams.max-size, gpu.streams.priority-limits), durations not negative; names are letters, "
						+ "digits, '.', '_' or '-'.";
			}
			if (hasField(errors, "cpu.devices")) {
				action += " gpu.cpu.devices is how many devices the CPU backend stands in for: 1 to "
						+ CpuSettings.MAX_DEVICES + ".";
			}
		}
		description.append("\n\nInvalid properties:");
		for (ObjectError error : errors.getAllErrors()) {
			description.append("\n    ");
			if (error instanceof FieldError field) {
				String name = prefix + "." + dashed(field.getField());
				ConfigurationProperty property = bound.get(name);
				List<ConfigurationProperty> elements = (property != null) ? List.of() : elements(bound, name);
				// The configured text ("-1s") reads better than the bound value (PT-1S).
				Object value = (property != null) ? property.getValue()
						: !elements.isEmpty() ? joined(elements) : field.getRejectedValue();
				description.append(name).append(" = ").append(value);
				Origin origin = (property != null) ? property.getOrigin()
						: !elements.isEmpty() ? elements.get(0).getOrigin() : Origin.from(field);
				if (origin != null) {
					description.append(" (").append(origin).append(')');
				}
				description.append(": ");
			}
			description.append(error.getDefaultMessage());
		}
		if (hasCode(errors, GpuPropertiesValidator.CODE_DEVICE_NOT_LISTED)) {
			// The other half: the list gpu.device is missing from, with where it was set.
			ConfigurationProperty devices = bound.get("gpu.devices");
			List<ConfigurationProperty> elements = (devices != null) ? List.of(devices) : elements(bound, "gpu.devices");
			if (!elements.isEmpty()) {
				description.append("\n    gpu.devices = ").append(joined(elements));
				if (elements.get(0).getOrigin() != null) {
					description.append(" (").append(elements.get(0).getOrigin()).append(')');
				}
				description.append(": the devices to open, which do not include gpu.device");
			}
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

	private static boolean hasCode(ValidationErrors errors, String code) {
		return errors.getAllErrors().stream().anyMatch((error) -> code.equals(error.getCode()));
	}

	private static boolean hasField(ValidationErrors errors, String field) {
		return errors.getAllErrors()
			.stream()
			.anyMatch((error) -> error instanceof FieldError fieldError && field.equals(fieldError.getField()));
	}

	/** The bound elements of a list property set element by element ({@code name[0]}, {@code name[1]}, ...). */
	private static List<ConfigurationProperty> elements(Map<String, ConfigurationProperty> bound, String name) {
		List<ConfigurationProperty> elements = new ArrayList<>();
		for (int i = 0; bound.containsKey(name + "[" + i + "]"); i++) {
			elements.add(bound.get(name + "[" + i + "]"));
		}
		return elements;
	}

	private static String joined(List<ConfigurationProperty> elements) {
		return elements.stream().map((element) -> String.valueOf(element.getValue())).collect(Collectors.joining(","));
	}

	/**
	 * The property name of a validation field: {@code streams.poolSize} is {@code streams.pool-size};
	 * a map key ({@code batching[search].maxBatchSize}) is kept as it was written, as its own segment
	 * when it is a plain one ({@code batching.search.max-batch-size}), in brackets otherwise.
	 */
	private static String dashed(String field) {
		StringBuilder result = new StringBuilder();
		int i = 0;
		while (i < field.length()) {
			int bracket = field.indexOf('[', i);
			String names = field.substring(i, (bracket < 0) ? field.length() : bracket);
			for (String part : names.split("\\.")) {
				if (!part.isEmpty()) {
					if (!result.isEmpty()) {
						result.append('.');
					}
					result.append(DataObjectPropertyName.toDashedForm(part));
				}
			}
			if (bracket < 0) {
				break;
			}
			int close = field.indexOf(']', bracket);
			String key = field.substring(bracket + 1, (close < 0) ? field.length() : close);
			result.append(key.matches("[a-z0-9-]+") ? "." + key : "[" + key + "]");
			i = (close < 0) ? field.length() : close + 1;
		}
		return result.toString();
	}

}
