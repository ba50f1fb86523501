package dev.gpucompute.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.springframework.util.unit.DataSize;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.settings.CopySettings;
import dev.gpucompute.settings.CpuSettings;
import dev.gpucompute.settings.GraphSettings;
import dev.gpucompute.settings.InvalidSettingException;
import dev.gpucompute.settings.Limits;
import dev.gpucompute.settings.ShutdownSettings;
import dev.gpucompute.settings.StreamSettings;

/**
 * Checks bound {@code gpu.*} values against the runtime's rules: each value is handed to the runtime's
 * settings record that holds its limits ({@code dev.gpucompute.settings}, {@link GpuBatcher.Settings}),
 * and a refusal ({@link InvalidSettingException}) is rejected on the property it came from, with one of
 * the {@code CODE_*} codes and its limit as the argument, which {@code InvalidGpuPropertiesFailureAnalyzer}
 * turns into a start-up report. The rules only the starter has (the device list, kernel locations,
 * problem details, values set to {@code null}) are checked here. Every problem is reported, in the
 * order of the checks below, not only the first.
 *
 * <p>The auto-configuration applies it when {@link GpuProperties} is bound (through a
 * {@code ConfigurationPropertiesBindHandlerAdvisor}, so no Bean Validation provider is needed).
 * Stateless and thread-safe.
 */
public final class GpuPropertiesValidator implements Validator {

	/** Error code of a value below its minimum (argument: the minimum). */
	public static final String CODE_TOO_SMALL = "gpu.too-small";

	/** Error code of a negative duration. */
	public static final String CODE_NEGATIVE = "gpu.negative";

	/** Error code of {@code gpu.streams.pool-size} larger than {@code gpu.streams.max-size} (argument: the maximum). */
	public static final String CODE_POOL_EXCEEDS_MAX = "gpu.pool-size-exceeds-max-size";

	/** Error code of a missing value, or an empty entry in a list. */
	public static final String CODE_BLANK = "gpu.blank";

	/** Error code of a value above its maximum (argument: the maximum). */
	public static final String CODE_TOO_LARGE = "gpu.too-large";

	/** Error code of a {@code gpu.devices} value that is not {@code all} or a list of distinct ordinals. */
	public static final String CODE_INVALID_DEVICES = "gpu.invalid-devices";

	/** Error code of a {@code gpu.device} that is not among {@code gpu.devices} (argument: the list). */
	public static final String CODE_DEVICE_NOT_LISTED = "gpu.device-not-listed";

	/** Error code of a {@code gpu.batching} name that cannot name a batcher (argument: the name). */
	public static final String CODE_INVALID_NAME = "gpu.invalid-name";

	@Override
	public boolean supports(Class<?> type) {
		return GpuProperties.class.isAssignableFrom(type);
	}

	/**
	 * Rejects every value of {@code target} (a {@link GpuProperties}) that breaks a rule, on its field
	 * path below {@code gpu}.
	 */
	@Override
	public void validate(Object target, Errors errors) {
		GpuProperties properties = (GpuProperties) target;
		if (properties.getBackend() == null) {
			errors.rejectValue("backend", CODE_BLANK, "must be one of auto, cuda, cpu");
		}
		Integer device = properties.getDevice();
		if (device != null) {
			check(errors, "device", () -> GpuContext.builder().device(device));
		}
		List<String> devices = properties.getDevices();
		if (devices != null) {
			validateDevices(properties, devices, errors);
		}
		GpuProperties.Streams streams = properties.getStreams();
		validateStreams(streams, errors);
		for (String location : properties.getKernels().getLocations()) {
			if (location == null || location.isBlank()) {
				errors.rejectValue("kernels.locations", CODE_BLANK, "must not contain an empty location");
				break;
			}
		}
		if (properties.getMetrics().getKernelTiming() == null) {
			errors.rejectValue("metrics.kernelTiming", CODE_BLANK, "must be one of off, sampled, all");
		}
		Duration drainTimeout = properties.getShutdown().getDrainTimeout();
		checkDuration(errors, "shutdown.drainTimeout", drainTimeout, () -> new ShutdownSettings(drainTimeout));
		DataSize stagingBudget = properties.getCopies().getStagingBudget();
		if (stagingBudget == null) {
			errors.rejectValue("copies.stagingBudget", CODE_BLANK, "must be set");
		}
		else if (stagingBudget.toBytes() < CopySettings.MIN_CHUNK) {
			// The smallest chunk is a whole number of KB; say it in the unit the property is written in.
			String minimum = (CopySettings.MIN_CHUNK / 1024) + "KB";
			errors.rejectValue("copies.stagingBudget", CODE_TOO_SMALL, new Object[] { minimum }, "must be at least "
					+ minimum + " (and at least one copy chunk, 2MB unless a customizer changes it)");
		}
		Duration stagingTimeout = properties.getCopies().getStagingTimeout();
		checkDuration(errors, "copies.stagingTimeout", stagingTimeout,
				() -> CopySettings.DEFAULTS.withStagingTimeout(stagingTimeout));
		Duration retryAfter = properties.getProblemDetails().getRetryAfter();
		checkDuration(errors, "problemDetails.retryAfter", retryAfter, () -> Limits.nanos(retryAfter, "retryAfter"));
		int cacheSize = properties.getGraphs().getCacheSize();
		check(errors, "graphs.cacheSize", () -> new GraphSettings(cacheSize));
		Integer threads = properties.getCpu().getThreads();
		if (threads != null) {
			check(errors, "cpu.threads", () -> CpuSettings.DEFAULTS.withThreads(threads));
		}
		for (Map.Entry<String, GpuProperties.Batcher> entry : properties.getBatching().entrySet()) {
			validateBatcher(errors, entry.getKey(), entry.getValue(), streams);
		}
		int cpuDevices = properties.getCpu().getDevices();
		check(errors, "cpu.devices", () -> CpuSettings.DEFAULTS.withDevices(cpuDevices));
	}

	private static void validateDevices(GpuProperties properties, List<String> devices, Errors errors) {
		try {
			DeviceSelection selection = DeviceSelection.parse(devices);
			Integer device = properties.getDevice();
			if (device != null && device >= 0 && !selection.all() && !selection.ordinals().contains(device)) {
				errors.rejectValue("device", CODE_DEVICE_NOT_LISTED, new Object[] { selection.toString() },
						"names the primary device, which must be one of gpu.devices (" + selection + ")");
			}
		}
		catch (IllegalArgumentException ex) {
			errors.rejectValue("devices", CODE_INVALID_DEVICES, String.valueOf(ex.getMessage()));
		}
	}

	private static void validateStreams(GpuProperties.Streams streams, Errors errors) {
		Integer poolSize = streams.getPoolSize();
		int maxSize = streams.getMaxSize();
		boolean poolSizeValid = poolSize == null
				|| check(errors, "streams.poolSize", () -> StreamSettings.DEFAULTS.withPoolSize(poolSize));
		if (check(errors, "streams.maxSize", () -> StreamSettings.DEFAULTS.withMaxSize(maxSize)) && poolSizeValid) {
			check(errors, "streams.poolSize", () -> StreamSettings.DEFAULTS.withMaxSize(maxSize).withPoolSize(poolSize).checked());
		}
		for (Map.Entry<StreamPriority, Integer> limit : streams.getPriorityLimits().entrySet()) {
			String field = "streams.priorityLimits[" + limit.getKey().name().toLowerCase(Locale.ROOT) + "]";
			Integer value = limit.getValue();
			if (value == null) {
				errors.rejectValue(field, CODE_BLANK, "must be set");
			}
			else if (check(errors, field, () -> StreamSettings.checkPriorityLimit(value, field))) {
				check(errors, field, () -> Limits.notAbove(value, field, Math.max(1, maxSize), "maxSize"));
			}
		}
		Duration acquireTimeout = streams.getAcquireTimeout();
		checkDuration(errors, "streams.acquireTimeout", acquireTimeout,
				() -> StreamSettings.DEFAULTS.withAcquireTimeout(acquireTimeout));
		Duration leakThreshold = streams.getLeakDetectionThreshold();
		checkDuration(errors, "streams.leakDetectionThreshold", leakThreshold,
				() -> StreamSettings.DEFAULTS.withLeakDetectionThreshold(leakThreshold));
		if (streams.getDefaultStream() == null) {
			errors.rejectValue("streams.defaultStream", CODE_BLANK, "must be one of per-thread, legacy");
		}
	}

	private static void validateBatcher(Errors errors, String name, GpuProperties.Batcher batcher,
			GpuProperties.Streams streams) {
		String field = "batching[" + name + "].";
		try {
			GpuBatcher.Settings.checkName(name);
		}
		catch (InvalidSettingException ex) {
			errors.rejectValue("batching", CODE_INVALID_NAME, new Object[] { name },
					"has a batcher named '" + name + "'; a name is 1 to 64 letters, digits, '.', '_' or '-'");
		}
		GpuBatcher.Settings defaults = GpuBatcher.Settings.DEFAULTS;
		check(errors, field + "maxBatchSize", () -> defaults.withMaxBatchSize(batcher.getMaxBatchSize()));
		check(errors, field + "maxQueued", () -> defaults.withMaxQueued(batcher.getMaxQueued()));
		int leasable = Math.max(1, streams.getMaxSize());
		Integer limit = (batcher.getPriority() != null) ? streams.getPriorityLimits().get(batcher.getPriority()) : null;
		if (limit != null && limit >= 1) {
			leasable = Math.min(leasable, limit);
		}
		int batches = batcher.getMaxConcurrentBatches();
		int leasableStreams = leasable;
		if (check(errors, field + "maxConcurrentBatches", () -> defaults.withMaxConcurrentBatches(batches))) {
			check(errors, field + "maxConcurrentBatches",
					() -> defaults.withMaxConcurrentBatches(batches).checkedFor(leasableStreams));
		}
		Duration delay = batcher.getMaxQueueDelay();
		checkDuration(errors, field + "maxQueueDelay", delay, () -> defaults.withMaxQueueDelay(delay));
		Duration timeout = batcher.getTimeout();
		checkDuration(errors, field + "timeout", timeout, () -> defaults.withTimeout(timeout));
		if (batcher.getPriority() == null) {
			errors.rejectValue(field + "priority", CODE_BLANK, "must be one of normal, high");
		}
	}

	private static void checkDuration(Errors errors, String field, Duration value, Runnable check) {
		if (value == null) {
			errors.rejectValue(field, CODE_BLANK, "must be set");
		}
		else {
			check(errors, field, check);
		}
	}

	/**
	 * Runs the runtime's check of one value and rejects {@code field} with what it refused.
	 * @return whether the value passed
	 */
	private static boolean check(Errors errors, String field, Runnable check) {
		try {
			check.run();
			return true;
		}
		catch (InvalidSettingException ex) {
			reject(errors, field, ex);
			return false;
		}
	}

	private static void reject(Errors errors, String field, InvalidSettingException refusal) {
		Object limit = refusal.limit();
		switch (refusal.problem()) {
			case NEGATIVE -> errors.rejectValue(field, CODE_NEGATIVE, "must not be negative");
			case TOO_SMALL, NOT_A_MULTIPLE -> errors.rejectValue(field, CODE_TOO_SMALL, new Object[] { limit },
					"must be at least " + limit);
			case EXCEEDS -> {
				if (field.equals("streams.poolSize")) {
					errors.rejectValue(field, CODE_POOL_EXCEEDS_MAX, new Object[] { limit },
							"must not exceed gpu.streams.max-size (" + limit + ")");
				}
				else {
					errors.rejectValue(field, CODE_TOO_LARGE, new Object[] { limit }, "must be at most " + limit);
				}
			}
			case TOO_LARGE -> errors.rejectValue(field, CODE_TOO_LARGE, new Object[] { limit }, "must be at most " + limit);
			case MALFORMED -> errors.rejectValue(field, CODE_INVALID_NAME, new Object[] { field },
					refusal.getMessage());
		}
	}

}
