package dev.gpucompute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.springframework.validation.Errors;
import org.springframework.validation.FieldError;
import org.springframework.validation.MapBindingResult;

import dev.gpucompute.StreamPriority;

/**
 * Tests for the rules of {@link GpuPropertiesValidator}, called the way the binder calls them: through
 * {@link GpuProperties} as a Spring {@code Validator}. The failure analyzer tests check the reports
 * that bound values produce; these check the contract underneath (the field path and error code of
 * each problem, which {@code InvalidGpuPropertiesFailureAnalyzer} reads) and the values that binding
 * alone rarely produces, such as a group value set to null in code.
 */
class GpuPropertiesValidatorTests {

	@Test
	void theDefaultsBreakNoRule() {
		assertThat(fieldErrors(new GpuProperties())).isEmpty();
	}

	@Test
	void gpuPropertiesIsTheValidatorOfItsOwnTypeOnly() {
		GpuProperties properties = new GpuProperties();
		assertThat(properties.supports(GpuProperties.class)).isTrue();
		assertThat(properties.supports(GpuProperties.Streams.class)).isFalse();
	}

	@Test
	void everyProblemIsRejectedOnItsFieldWithItsCodeInTheOrderOfTheChecks() {
		GpuProperties properties = new GpuProperties();
		properties.setDevice(-1);
		properties.getStreams().setMaxSize(4);
		properties.getStreams().setPoolSize(6);
		properties.getStreams().getPriorityLimits().put(StreamPriority.HIGH, 5);
		properties.getStreams().setAcquireTimeout(Duration.ofSeconds(-1));
		properties.getCopies().setStagingBudget(null);
		properties.getProblemDetails().setRetryAfter(null);
		properties.getCpu().setDevices(GpuProperties.MAX_CPU_DEVICES + 1);
		assertThat(fieldErrors(properties)).extracting(FieldError::getField, FieldError::getCode)
			.containsExactly(tuple("device", GpuProperties.CODE_TOO_SMALL),
					tuple("streams.poolSize", GpuProperties.CODE_POOL_EXCEEDS_MAX),
					tuple("streams.priorityLimits[high]", GpuProperties.CODE_TOO_LARGE),
					tuple("streams.acquireTimeout", GpuProperties.CODE_NEGATIVE),
					tuple("copies.stagingBudget", GpuProperties.CODE_BLANK),
					tuple("problemDetails.retryAfter", GpuProperties.CODE_BLANK),
					tuple("cpu.devices", GpuProperties.CODE_TOO_LARGE));
	}

	@Test
	void enumValuesSetToNullInCodeAreRejected() {
		GpuProperties properties = new GpuProperties();
		properties.setBackend(null);
		properties.getStreams().setDefaultStream(null);
		properties.getMetrics().setKernelTiming(null);
		assertThat(fieldErrors(properties)).extracting(FieldError::getField, FieldError::getCode)
			.containsExactly(tuple("backend", GpuProperties.CODE_BLANK),
					tuple("streams.defaultStream", GpuProperties.CODE_BLANK),
					tuple("metrics.kernelTiming", GpuProperties.CODE_BLANK));
	}

	@Test
	void aDeviceSetOutsideTheListedDevicesNamesTheList() {
		GpuProperties properties = new GpuProperties();
		properties.setDevices(List.of("0", "2"));
		properties.setDevice(1);
		List<FieldError> errors = fieldErrors(properties);
		assertThat(errors).extracting(FieldError::getField, FieldError::getCode)
			.containsExactly(tuple("device", GpuProperties.CODE_DEVICE_NOT_LISTED));
		assertThat(errors.get(0).getArguments()).containsExactly("0,2");
	}

	@Test
	void aBatcherMayRunNoMoreBatchesAtOnceThanItsPriorityMayLeaseStreams() {
		GpuProperties properties = new GpuProperties();
		properties.getStreams().getPriorityLimits().put(StreamPriority.HIGH, 2);
		GpuProperties.Batcher batcher = new GpuProperties.Batcher();
		batcher.setPriority(StreamPriority.HIGH);
		batcher.setMaxConcurrentBatches(3);
		properties.getBatching().put("interactive", batcher);
		GpuProperties.Batcher unnamed = new GpuProperties.Batcher();
		unnamed.setPriority(null);
		properties.getBatching().put("my batcher", unnamed);
		List<FieldError> errors = fieldErrors(properties);
		assertThat(errors).extracting(FieldError::getField, FieldError::getCode)
			.containsExactly(tuple("batching[interactive].maxConcurrentBatches", GpuProperties.CODE_TOO_LARGE),
					tuple("batching", GpuProperties.CODE_INVALID_NAME),
					tuple("batching[my batcher].priority", GpuProperties.CODE_BLANK));
		assertThat(errors.get(0).getArguments()).containsExactly(2);
	}

	private static List<FieldError> fieldErrors(GpuProperties properties) {
		Errors errors = new MapBindingResult(new HashMap<>(), "gpu");
		properties.validate(properties, errors);
		return errors.getFieldErrors();
	}

}
