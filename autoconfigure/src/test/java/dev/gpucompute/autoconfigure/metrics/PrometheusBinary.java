package dev.gpucompute.autoconfigure.metrics;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Finds the {@code prometheus} binary ({@code PROMETHEUS_BINARY}, else {@code PATH}) and, as a JUnit
 * condition, skips a test class without it, stating why, unless {@code PROMETHEUS_REQUIRED=1}: then
 * its absence fails the class. Debian: {@code apt-get install prometheus}.
 */
final class PrometheusBinary implements ExecutionCondition {

	@Override
	public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
		Path binary = find();
		if (binary != null) {
			return ConditionEvaluationResult.enabled("Prometheus binary at " + binary);
		}
		String reason = "No prometheus binary (set PROMETHEUS_BINARY or put prometheus on PATH; Debian: apt-get "
				+ "install prometheus)";
		if ("1".equals(System.getenv("PROMETHEUS_REQUIRED"))) {
			throw new IllegalStateException(reason + ", and PROMETHEUS_REQUIRED=1");
		}
		return ConditionEvaluationResult.disabled(reason);
	}

	static Path find() {
		String explicit = System.getenv("PROMETHEUS_BINARY");
		if (explicit != null && !explicit.isBlank()) {
			Path path = Path.of(explicit);
			return Files.isExecutable(path) ? path : null;
		}
		String searchPath = System.getenv("PATH");
		if (searchPath == null) {
			return null;
		}
		for (String dir : searchPath.split(File.pathSeparator)) {
			if (!dir.isEmpty()) {
				Path candidate = Path.of(dir, "prometheus");
				if (Files.isExecutable(candidate) && !Files.isDirectory(candidate)) {
					return candidate;
				}
			}
		}
		return null;
	}

}
