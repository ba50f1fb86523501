package dev.gpucompute.test;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.opentest4j.AssertionFailedError;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.Backends;

/**
 * For tests that need a CUDA device (device 0): tagged {@code gpu}, and skipped with the reason where
 * none can be used, or failed instead when the environment variable {@code GPU_REQUIRED=1} is set (a
 * GPU machine's run, where a skip would hide a broken set-up).
 */
@Target({ ElementType.TYPE, ElementType.METHOD })
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@Tag("gpu")
@ExtendWith(RequiresCuda.Condition.class)
public @interface RequiresCuda {

	/** The condition behind the annotation. */
	final class Condition implements ExecutionCondition {

		@Override
		public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
			String unavailable = unavailableReason();
			return (unavailable == null) ? ConditionEvaluationResult.enabled("CUDA device 0 is available")
					: ConditionEvaluationResult.disabled(unavailable);
		}

		/**
		 * Why CUDA device 0 cannot be used, or {@code null} when it can.
		 * @throws AssertionFailedError when it cannot and {@code GPU_REQUIRED=1}
		 */
		static @Nullable String unavailableReason() {
			Availability cuda = Backends.select(Backend.CUDA, 0).availability();
			if (cuda.available()) {
				return null;
			}
			String reason = "CUDA unavailable: " + cuda.reason();
			if ("1".equals(System.getenv("GPU_REQUIRED"))) {
				throw new AssertionFailedError("GPU_REQUIRED=1 but " + reason);
			}
			return reason;
		}

	}

}
