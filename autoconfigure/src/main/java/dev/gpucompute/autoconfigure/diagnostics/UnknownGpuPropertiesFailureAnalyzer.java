package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.autoconfigure.UnknownGpuPropertiesException;
import dev.gpucompute.autoconfigure.UnknownGpuPropertiesException.UnknownProperty;

/**
 * Explains keys under {@code gpu.} that no gpu-compute property binds: each key with its value,
 * where it was set and the nearest known key, and how to relax the check.
 */
class UnknownGpuPropertiesFailureAnalyzer extends GpuFailureAnalyzer<UnknownGpuPropertiesException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, UnknownGpuPropertiesException cause) {
		int count = cause.properties().size();
		StringBuilder description = new StringBuilder((count == 1) ? "A key" : count + " keys")
			.append(" under gpu. ")
			.append((count == 1) ? "is" : "are")
			.append(" not a gpu-compute property, so ")
			.append((count == 1) ? "it" : "they")
			.append(" would be ignored and the defaults used:\n");
		boolean suggested = false;
		for (UnknownProperty property : cause.properties()) {
			description.append("\n    ").append(property);
			suggested |= property.suggestion() != null;
		}
		String action = (suggested ? "Correct the names (the nearest known key is shown above)" : "Correct the names")
				+ " or remove them; the gpu.* properties are listed in your IDE and in the gpu-compute documentation. "
				+ "If these keys are meant for something else, set gpu.unknown-properties=warn to log them and start, "
				+ "or gpu.unknown-properties=ignore.";
		return new FailureAnalysis(description.toString(), action, cause);
	}

}
