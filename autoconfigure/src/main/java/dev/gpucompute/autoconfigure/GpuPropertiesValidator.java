package dev.gpucompute.autoconfigure;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;

import org.springframework.util.unit.DataSize;
import org.springframework.validation.Errors;

import dev.gpucompute.GpuBatcher;
import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamPriority;

/**
 * The rules that bound {@code gpu.*} values must meet: ranges, sizes that contradict each other, the
 * device list, batcher names. {@link GpuProperties} is the Spring {@code Validator} that the binder
 * applies (so no Bean Validation provider is needed) and hands the checking to this class, which
 * keeps the properties class to the property surface itself.
 *
 * <p>Each problem is rejected on the property's field path with one of the {@code GpuProperties.CODE_*}
 * codes and its arguments, which {@code InvalidGpuPropertiesFailureAnalyzer} turns into a start-up
 * report; every problem is reported, in the order of the checks below, not only the first. Stateless.
 */
final class GpuPropertiesValidator {

	private GpuPropertiesValidator() {
	}

	/**
	 * Rejects every value of {@code properties} that breaks a rule.
	 * @param properties the bound properties
	 * @param errors where each problem is rejected, on the field path below {@code gpu}
	 */
	static void validate(GpuProperties properties, Errors errors) {
		if (properties.getBackend() == null) {
			errors.rejectValue("backend", GpuProperties.CODE_BLANK, "must be one of auto, cuda, cpu");
		}
		if (properties.getDevice() < 0) {
			errors.rejectValue("device", GpuProperties.CODE_TOO_SMALL, new Object[] { 0 }, "must be at least 0");
		}
		if (properties.getDevices() != null) {
			validateDevices(properties, errors);
		}
		GpuProperties.Streams streams = properties.getStreams();
		validateStreams(streams, errors);
		for (String location : properties.getKernels().getLocations()) {
			if (location == null || location.isBlank()) {
				errors.rejectValue("kernels.locations", GpuProperties.CODE_BLANK, "must not contain an empty location");
				break;
			}
		}
		if (properties.getMetrics().getKernelTiming() == null) {
			errors.rejectValue("metrics.kernelTiming", GpuProperties.CODE_BLANK, "must be one of off, sampled, all");
		}
		rejectNegative(errors, "shutdown.drainTimeout", properties.getShutdown().getDrainTimeout());
		DataSize stagingBudget = properties.getCopies().getStagingBudget();
		if (stagingBudget == null) {
			errors.rejectValue("copies.stagingBudget", GpuProperties.CODE_BLANK, "must be set");
		}
		else if (stagingBudget.toBytes() < GpuContext.MIN_COPY_CHUNK) {
			// The smallest chunk is a whole number of KB; say it in the unit the property is written in.
			String minimum = (GpuContext.MIN_COPY_CHUNK / 1024) + "KB";
			errors.rejectValue("copies.stagingBudget", GpuProperties.CODE_TOO_SMALL, new Object[] { minimum },
					"must be at least " + minimum
							+ " (and at least one copy chunk, 2MB unless a customizer changes it)");
		}
		rejectNegative(errors, "copies.stagingTimeout", properties.getCopies().getStagingTimeout());
		rejectNegative(errors, "problemDetails.retryAfter", properties.getProblemDetails().getRetryAfter());
		if (properties.getGraphs().getCacheSize() < 1) {
			errors.rejectValue("graphs.cacheSize", GpuProperties.CODE_TOO_SMALL, new Object[] { 1 }, "must be at least 1");
		}
		Integer threads = properties.getCpu().getThreads();
		if (threads != null && threads < 1) {
			errors.rejectValue("cpu.threads", GpuProperties.CODE_TOO_SMALL, new Object[] { 1 }, "must be at least 1");
		}
		for (Map.Entry<String, GpuProperties.Batcher> entry : properties.getBatching().entrySet()) {
			validateBatcher(errors, entry.getKey(), entry.getValue(), streams);
		}
		int cpuDevices = properties.getCpu().getDevices();
		if (cpuDevices < 1) {
			errors.rejectValue("cpu.devices", GpuProperties.CODE_TOO_SMALL, new Object[] { 1 }, "must be at least 1");
		}
		else if (cpuDevices > GpuProperties.MAX_CPU_DEVICES) {
			errors.rejectValue("cpu.devices", GpuProperties.CODE_TOO_LARGE, new Object[] { GpuProperties.MAX_CPU_DEVICES },
					"must be at most " + GpuProperties.MAX_CPU_DEVICES);
		}
	}

	private static void validateDevices(GpuProperties properties, Errors errors) {
		try {
			DeviceSelection selection = DeviceSelection.parse(properties.getDevices());
			if (properties.isDeviceSet() && properties.getDevice() >= 0 && !selection.all()
					&& !selection.ordinals().contains(properties.getDevice())) {
				errors.rejectValue("device", GpuProperties.CODE_DEVICE_NOT_LISTED, new Object[] { selection.toString() },
						"names the primary device, which must be one of gpu.devices (" + selection + ")");
			}
		}
		catch (IllegalArgumentException ex) {
			errors.rejectValue("devices", GpuProperties.CODE_INVALID_DEVICES, ex.getMessage());
		}
	}

	private static void validateStreams(GpuProperties.Streams streams, Errors errors) {
		if (streams.getPoolSize() < 0) {
			errors.rejectValue("streams.poolSize", GpuProperties.CODE_TOO_SMALL, new Object[] { 0 }, "must be at least 0");
		}
		if (streams.getMaxSize() < 1) {
			errors.rejectValue("streams.maxSize", GpuProperties.CODE_TOO_SMALL, new Object[] { 1 }, "must be at least 1");
		}
		else if (streams.getPoolSize() > streams.getMaxSize()) {
			errors.rejectValue("streams.poolSize", GpuProperties.CODE_POOL_EXCEEDS_MAX,
					new Object[] { streams.getMaxSize() },
					"must not exceed gpu.streams.max-size (" + streams.getMaxSize() + ")");
		}
		for (Map.Entry<StreamPriority, Integer> limit : streams.getPriorityLimits().entrySet()) {
			String field = "streams.priorityLimits[" + limit.getKey().name().toLowerCase(Locale.ROOT) + "]";
			rejectOutside(errors, field, limit.getValue(), 1, Math.max(1, streams.getMaxSize()));
		}
		rejectNegative(errors, "streams.acquireTimeout", streams.getAcquireTimeout());
		rejectNegative(errors, "streams.leakDetectionThreshold", streams.getLeakDetectionThreshold());
		if (streams.getDefaultStream() == null) {
			errors.rejectValue("streams.defaultStream", GpuProperties.CODE_BLANK, "must be one of per-thread, legacy");
		}
	}

	private static void validateBatcher(Errors errors, String name, GpuProperties.Batcher batcher,
			GpuProperties.Streams streams) {
		String field = "batching[" + name + "].";
		if (!name.matches("[A-Za-z0-9._-]{1,64}")) {
			errors.rejectValue("batching", GpuProperties.CODE_INVALID_NAME, new Object[] { name },
					"has a batcher named '" + name + "'; a name is 1 to 64 letters, digits, '.', '_' or '-'");
		}
		rejectOutside(errors, field + "maxBatchSize", batcher.getMaxBatchSize(), 1, GpuBatcher.MAX_BATCH_SIZE);
		rejectOutside(errors, field + "maxQueued", batcher.getMaxQueued(), 1, GpuBatcher.MAX_QUEUED);
		int leasable = Math.max(1, streams.getMaxSize());
		Integer limit = (batcher.getPriority() != null) ? streams.getPriorityLimits().get(batcher.getPriority()) : null;
		if (limit != null && limit >= 1) {
			leasable = Math.min(leasable, limit);
		}
		rejectOutside(errors, field + "maxConcurrentBatches", batcher.getMaxConcurrentBatches(), 1, leasable);
		rejectNegative(errors, field + "maxQueueDelay", batcher.getMaxQueueDelay());
		rejectNegative(errors, field + "timeout", batcher.getTimeout());
		if (batcher.getPriority() == null) {
			errors.rejectValue(field + "priority", GpuProperties.CODE_BLANK, "must be one of normal, high");
		}
	}

	private static void rejectOutside(Errors errors, String field, int value, int min, int max) {
		if (value < min) {
			errors.rejectValue(field, GpuProperties.CODE_TOO_SMALL, new Object[] { min }, "must be at least " + min);
		}
		else if (value > max) {
			errors.rejectValue(field, GpuProperties.CODE_TOO_LARGE, new Object[] { max }, "must be at most " + max);
		}
	}

	private static void rejectNegative(Errors errors, String field, Duration value) {
		if (value == null) {
			errors.rejectValue(field, GpuProperties.CODE_BLANK, "must be set");
		}
		else if (value.isNegative()) {
			errors.rejectValue(field, GpuProperties.CODE_NEGATIVE, "must not be negative");
		}
	}

}
