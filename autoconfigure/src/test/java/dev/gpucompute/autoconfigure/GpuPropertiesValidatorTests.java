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
import dev.gpucompute.settings.CpuSettings;

/**
 * Tests for the rules of {@link GpuPropertiesValidator}, called the way the binder calls them: as a
 * Spring {@code Validator} of {@link GpuProperties}. The failure analyzer tests check the reports
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
	void itValidatesGpuPropertiesOnly() {
		GpuPropertiesValidator validator = new GpuPropertiesValidator();
		assertThat(validator.supports(GpuProperties.class)).isTrue();
		assertThat(validator.supports(GpuProperties.Streams.class)).isFalse();
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
		properties.getCpu().setDevices(CpuSettings.MAX_DEVICES + 1);
		assertThat(fieldErrors(properties)).extracting(FieldError::getField, FieldError::getCode)
			.containsExactly(tuple("device", GpuPropertiesValidator.CODE_TOO_SMALL),
					tuple("streams.poolSize", GpuPropertiesValidator.CODE_POOL_EXCEEDS_MAX),
					tuple("streams.priorityLimits[high]", GpuPropertiesValidator.CODE_TOO_LARGE),
					tuple("streams.acquireTimeout", GpuPropertiesValidator.CODE_NEGATIVE),
					tuple("copies.stagingBudget", GpuPropertiesValidator.CODE_BLANK),
					tuple("problemDetails.retryAfter", GpuPropertiesValidator.CODE_BLANK),
					tuple("cpu.devices", GpuPropertiesValidator.CODE_TOO_LARGE));
	}

	@Test
	void enumValuesSetToNullInCodeAreRejected() {
		GpuProperties properties = new GpuProperties();
		properties.setBackend(null);
		properties.getStreams().setDefaultStream(null);
		properties.getMetrics().setKernelTiming(null);
		assertThat(fieldErrors(properties)).extracting(FieldError::getField, FieldError::getCode)
			.containsExactly(tuple("backend", GpuPropertiesValidator.CODE_BLANK),
					tuple("streams.defaultStream", GpuPropertiesValidator.CODE_BLANK),
					tuple("metrics.kernelTiming", GpuPropertiesValidator.CODE_BLANK));
	}

	@Test
	void aDeviceSetOutsideTheListedDevicesNamesTheList() {
		GpuProperties properties = new GpuProperties();
		properties.setDevices(List.of("0", "2"));
		properties.setDevice(1);
		List<FieldError> errors = fieldErrors(properties);
		assertThat(errors).extracting(FieldError::getField, FieldError::getCode)
			.containsExactly(tuple("device", GpuPropertiesValidator.CODE_DEVICE_NOT_LISTED));
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
			.containsExactly(tuple("batching[interactive].maxConcurrentBatches", GpuPropertiesValidator.CODE_TOO_LARGE),
					tuple("batching", GpuPropertiesValidator.CODE_INVALID_NAME),
					tuple("batching[my batcher].priority", GpuPropertiesValidator.CODE_BLANK));
		assertThat(errors.get(0).getArguments()).containsExactly(2);
	}

	private static List<FieldError> fieldErrors(GpuProperties properties) {
		Errors errors = new MapBindingResult(new HashMap<>(), "gpu");
		new GpuPropertiesValidator().validate(properties, errors);
		return errors.getFieldErrors();
	}

}
