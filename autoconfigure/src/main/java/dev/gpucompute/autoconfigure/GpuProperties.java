package dev.gpucompute.autoconfigure;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.KernelTiming;

/**
 * Configuration of the GPU beans, bound to the {@code gpu.*} properties.
 *
 * <p>The properties validate themselves (this class is a Spring {@link Validator}, which the
 * binder applies without needing a Bean Validation provider on the class path): a value out of
 * range, or sizes that contradict each other, fail start-up with a report that names the property,
 * its value and where it was set.
 */
@ConfigurationProperties("gpu")
public class GpuProperties implements Validator {

	/** Error code of a value below its minimum. */
	public static final String CODE_TOO_SMALL = "gpu.too-small";

	/** Error code of a negative duration. */
	public static final String CODE_NEGATIVE = "gpu.negative";

	/** Error code of {@code gpu.streams.pool-size} larger than {@code gpu.streams.max-size}. */
	public static final String CODE_POOL_EXCEEDS_MAX = "gpu.pool-size-exceeds-max-size";

	/** Error code of an empty entry in a list. */
	public static final String CODE_BLANK = "gpu.blank";

	/**
	 * Whether to configure the GPU beans (context, stream pool, event registry, launcher) at all.
	 */
	private boolean enabled = true;

	/**
	 * Backend to run on: 'auto' uses CUDA when the driver loads and the device exists and the CPU
	 * backend otherwise (logging why), 'cuda' fails start-up when CUDA cannot be used, 'cpu' always
	 * uses the CPU backend.
	 */
	private BackendChoice backend = BackendChoice.AUTO;

	/**
	 * Ordinal of the CUDA device to open (0 is the first device). The CPU backend has one device,
	 * 0; with 'auto', a machine without CUDA falls back to it whatever the ordinal.
	 */
	private int device = 0;

	private final Streams streams = new Streams();

	private final Kernels kernels = new Kernels();

	private final Metrics metrics = new Metrics();

	private final Shutdown shutdown = new Shutdown();

	private final Cpu cpu = new Cpu();

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public BackendChoice getBackend() {
		return this.backend;
	}

	public void setBackend(BackendChoice backend) {
		this.backend = backend;
	}

	public int getDevice() {
		return this.device;
	}

	public void setDevice(int device) {
		this.device = device;
	}

	public Streams getStreams() {
		return this.streams;
	}

	public Kernels getKernels() {
		return this.kernels;
	}

	public Metrics getMetrics() {
		return this.metrics;
	}

	public Shutdown getShutdown() {
		return this.shutdown;
	}

	public Cpu getCpu() {
		return this.cpu;
	}

	@Override
	public boolean supports(Class<?> type) {
		return GpuProperties.class.isAssignableFrom(type);
	}

	@Override
	public void validate(Object target, Errors errors) {
		GpuProperties properties = (GpuProperties) target;
		if (properties.getBackend() == null) {
			errors.rejectValue("backend", CODE_BLANK, "must be one of auto, cuda, cpu");
		}
		if (properties.getDevice() < 0) {
			errors.rejectValue("device", CODE_TOO_SMALL, new Object[] { 0 }, "must be at least 0");
		}
		Streams streams = properties.getStreams();
		if (streams.getPoolSize() < 0) {
			errors.rejectValue("streams.poolSize", CODE_TOO_SMALL, new Object[] { 0 }, "must be at least 0");
		}
		if (streams.getMaxSize() < 1) {
			errors.rejectValue("streams.maxSize", CODE_TOO_SMALL, new Object[] { 1 }, "must be at least 1");
		}
		else if (streams.getPoolSize() > streams.getMaxSize()) {
			errors.rejectValue("streams.poolSize", CODE_POOL_EXCEEDS_MAX, new Object[] { streams.getMaxSize() },
					"must not exceed gpu.streams.max-size (" + streams.getMaxSize() + ")");
		}
		rejectNegative(errors, "streams.acquireTimeout", streams.getAcquireTimeout());
		rejectNegative(errors, "streams.leakDetectionThreshold", streams.getLeakDetectionThreshold());
		if (streams.getDefaultStream() == null) {
			errors.rejectValue("streams.defaultStream", CODE_BLANK, "must be one of per-thread, legacy");
		}
		for (String location : properties.getKernels().getLocations()) {
			if (location == null || location.isBlank()) {
				errors.rejectValue("kernels.locations", CODE_BLANK, "must not contain an empty location");
				break;
			}
		}
		if (properties.getMetrics().getKernelTiming() == null) {
			errors.rejectValue("metrics.kernelTiming", CODE_BLANK, "must be one of off, sampled, all");
		}
		rejectNegative(errors, "shutdown.drainTimeout", properties.getShutdown().getDrainTimeout());
		Integer threads = properties.getCpu().getThreads();
		if (threads != null && threads < 1) {
			errors.rejectValue("cpu.threads", CODE_TOO_SMALL, new Object[] { 1 }, "must be at least 1");
		}
	}

	private static void rejectNegative(Errors errors, String field, Duration value) {
		if (value == null) {
			errors.rejectValue(field, CODE_BLANK, "must be set");
		}
		else if (value.isNegative()) {
			errors.rejectValue(field, CODE_NEGATIVE, "must not be negative");
		}
	}

	/** The stream pool: {@code gpu.streams.*}. */
	public static class Streams {

		/**
		 * Number of pooled streams created at start-up, before the first request needs one.
		 */
		private int poolSize = 8;

		/**
		 * Most streams the pool creates; when all are leased, callers wait up to the acquire
		 * timeout.
		 */
		private int maxSize = 32;

		/**
		 * Longest wait for a pooled stream when all are leased; past it the caller gets a
		 * PoolExhaustedException. Zero means do not wait.
		 */
		private Duration acquireTimeout = Duration.ofSeconds(30);

		/**
		 * Stream that work goes to when no stream is current: 'per-thread' (each thread has its own,
		 * so request threads do not serialise each other) or 'legacy' (one stream shared by all
		 * threads, which synchronises with other blocking streams).
		 */
		private DefaultStreamMode defaultStream = DefaultStreamMode.PER_THREAD;

		/**
		 * A stream lease held longer than this logs a possible leak with the stack where it was
		 * acquired; counts in the pool statistics. Zero turns detection off (and saves capturing
		 * a stack per lease).
		 */
		private Duration leakDetectionThreshold = Duration.ZERO;

		public int getPoolSize() {
			return this.poolSize;
		}

		public void setPoolSize(int poolSize) {
			this.poolSize = poolSize;
		}

		public int getMaxSize() {
			return this.maxSize;
		}

		public void setMaxSize(int maxSize) {
			this.maxSize = maxSize;
		}

		public Duration getAcquireTimeout() {
			return this.acquireTimeout;
		}

		public void setAcquireTimeout(Duration acquireTimeout) {
			this.acquireTimeout = acquireTimeout;
		}

		public DefaultStreamMode getDefaultStream() {
			return this.defaultStream;
		}

		public void setDefaultStream(DefaultStreamMode defaultStream) {
			this.defaultStream = defaultStream;
		}

		public Duration getLeakDetectionThreshold() {
			return this.leakDetectionThreshold;
		}

		public void setLeakDetectionThreshold(Duration leakDetectionThreshold) {
			this.leakDetectionThreshold = leakDetectionThreshold;
		}

	}

	/** Kernels loaded at start-up: {@code gpu.kernels.*}. */
	public static class Kernels {

		/**
		 * Where kernel files (.cu, .ptx, .cubin, .fatbin) are looked for, recursively; each file is
		 * a kernel named like the file and is loaded, and compiled where needed, at start-up, so a
		 * broken kernel fails start-up. A 'classpath:' location is searched in every class-path
		 * root. Parameter types come from a KernelSource bean of the same name, a '<name>.params'
		 * file beside the kernel, or a .cu file's own signature.
		 */
		private List<String> locations = new ArrayList<>(List.of("classpath:gpu/kernels/"));

		/**
		 * Extra options for compiling CUDA C kernels at run time (for example '-use_fast_math');
		 * a kernel's own options are added after these.
		 */
		private List<String> compileOptions = new ArrayList<>();

		/**
		 * Directory of the compiled-kernel cache, keyed by source, options, device architecture
		 * and driver version. Defaults to 'gpu-compute-kernels' in the system temp directory.
		 */
		private Path cacheDir;

		public List<String> getLocations() {
			return this.locations;
		}

		public void setLocations(List<String> locations) {
			this.locations = locations;
		}

		public List<String> getCompileOptions() {
			return this.compileOptions;
		}

		public void setCompileOptions(List<String> compileOptions) {
			this.compileOptions = compileOptions;
		}

		public Path getCacheDir() {
			return this.cacheDir;
		}

		public void setCacheDir(Path cacheDir) {
			this.cacheDir = cacheDir;
		}

	}

	/** What the runtime measures: {@code gpu.metrics.*}. */
	public static class Metrics {

		/**
		 * GPU-time measurement of launches with a pair of timing events: 'off', 'sampled' (one
		 * launch in 64 per kernel, while fewer than 128 timed launches wait to be read) or 'all'
		 * (every launch; two extra events each).
		 */
		private KernelTiming kernelTiming = KernelTiming.SAMPLED;

		public KernelTiming getKernelTiming() {
			return this.kernelTiming;
		}

		public void setKernelTiming(KernelTiming kernelTiming) {
			this.kernelTiming = kernelTiming;
		}

		/**
		 * Whether every kernel launch is wrapped in a Micrometer Observation (a span inside the
		 * request's span for tracing users). Off by default: an observation costs several times
		 * a launch itself.
		 */
		private boolean observeLaunches;

		public boolean isObserveLaunches() {
			return this.observeLaunches;
		}

		public void setObserveLaunches(boolean observeLaunches) {
			this.observeLaunches = observeLaunches;
		}

	}

	/** Graceful shutdown: {@code gpu.shutdown.*}. */
	public static class Shutdown {

		/**
		 * Longest wait, when the application stops, for GPU work already enqueued to finish
		 * before streams, events and device memory are released.
		 */
		private Duration drainTimeout = Duration.ofSeconds(30);

		public Duration getDrainTimeout() {
			return this.drainTimeout;
		}

		public void setDrainTimeout(Duration drainTimeout) {
			this.drainTimeout = drainTimeout;
		}

	}

	/** The CPU backend: {@code gpu.cpu.*}. */
	public static class Cpu {

		/**
		 * Worker threads of the CPU backend, which run kernel blocks in parallel. Defaults to the
		 * number of available processors.
		 */
		private Integer threads;

		public Integer getThreads() {
			return this.threads;
		}

		public void setThreads(Integer threads) {
			this.threads = threads;
		}

	}

}
