package dev.gpucompute.autoconfigure.cuda;

import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.opentest4j.AssertionFailedError;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.Backends;

/**
 * Disables a test with the probe's reason when no CUDA device can be used, and fails it instead
 * when {@code GPU_REQUIRED=1} (the GPU machine run, where a skip would hide a broken setup).
 */
public final class RequiresCuda implements ExecutionCondition {

	@Override
	public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
		if (context.getTestMethod().isEmpty()) {
			return ConditionEvaluationResult.enabled("CUDA availability is checked per test");
		}
		Availability probe = Backends.select(Backend.CUDA, 0).availability();
		if (probe.available()) {
			return ConditionEvaluationResult.enabled("CUDA available: " + probe.reason());
		}
		if ("1".equals(System.getenv("GPU_REQUIRED"))) {
			throw new AssertionFailedError("GPU_REQUIRED=1 but CUDA is unavailable: " + probe.reason());
		}
		return ConditionEvaluationResult.disabled("CUDA unavailable: " + probe.reason());
	}

}
