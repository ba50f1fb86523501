package dev.gpucompute.autoconfigure;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.util.unit.DataSize;

import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.KernelTiming;

/**
 * Configuration of the GPU beans, bound to the {@code gpu.*} properties: fields and their
 * descriptions, which become the IDE's help. The values' defaults and limits are the runtime's (the
 * records of {@code dev.gpucompute.settings} and {@code GpuBatcher.Settings}); a value left unset is
 * {@code null} where its default depends on another value. {@link GpuPropertiesValidator} checks the
 * bound values against the runtime's rules when they are bound, so that a value out of range fails
 * start-up with a report naming the property, its value and where it was set.
 */
@ConfigurationProperties("gpu")
public class GpuProperties {

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
	 * Ordinal of the device to open (0 is the first device); with several devices (gpu.devices),
	 * the primary one, which the single-device beans use. The CPU backend has gpu.cpu.devices
	 * devices (default 1); with 'auto', a machine without CUDA falls back to CPU device 0 when the
	 * ordinal is beyond them. Defaults to 0, or, with gpu.devices, to the first device listed.
	 */
	private @Nullable Integer device;

	/**
	 * Devices to open, one GPU context each: 'all' (every device of the backend) or a list of
	 * ordinals such as 0,1,3. The first listed is the primary device, unless gpu.device is set (it
	 * must then be one of them). Defaults to the one device gpu.device names.
	 */
	private @Nullable List<String> devices;

	/**
	 * What start-up does with a key under 'gpu.' that no gpu-compute property binds (a misspelled
	 * key would otherwise be ignored and its default used): 'fail' stops start-up with a report
	 * naming the key, where it was set and the nearest known key; 'warn' logs the same and starts;
	 * 'ignore' does not look. Environment variables are not checked.
	 */
	private UnknownPropertiesPolicy unknownProperties = UnknownPropertiesPolicy.FAIL;

	private final Streams streams = new Streams();

	private final Kernels kernels = new Kernels();

	private final Metrics metrics = new Metrics();

	private final Shutdown shutdown = new Shutdown();

	private final Copies copies = new Copies();

	private final Cpu cpu = new Cpu();

	private final ProblemDetails problemDetails = new ProblemDetails();

	@NestedConfigurationProperty
	private final GpuGraphProperties graphs = new GpuGraphProperties();

	/**
	 * Dynamic batchers by name, each created in code through the GpuBatchers bean, which gives it
	 * these settings: gpu.batching.<name>.max-batch-size (default 64), .max-queue-delay (0),
	 * .max-queued (1024), .priority (normal), .timeout (0: none) and .max-concurrent-batches (1).
	 */
	private final Map<String, Batcher> batching = new LinkedHashMap<>();

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

	public @Nullable Integer getDevice() {
		return this.device;
	}

	public void setDevice(@Nullable Integer device) {
		this.device = device;
	}

	public @Nullable List<String> getDevices() {
		return this.devices;
	}

	public void setDevices(@Nullable List<String> devices) {
		this.devices = devices;
	}

	public UnknownPropertiesPolicy getUnknownProperties() {
		return this.unknownProperties;
	}

	public void setUnknownProperties(UnknownPropertiesPolicy unknownProperties) {
		this.unknownProperties = unknownProperties;
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

	public Copies getCopies() {
		return this.copies;
	}

	public Cpu getCpu() {
		return this.cpu;
	}

	public GpuGraphProperties getGraphs() {
		return this.graphs;
	}

	public ProblemDetails getProblemDetails() {
		return this.problemDetails;
	}

	public Map<String, Batcher> getBatching() {
		return this.batching;
	}

	/** The stream pool: {@code gpu.streams.*}. */
	public static class Streams {

		/**
		 * Number of pooled streams created at start-up, before the first request needs one.
		 * Defaults to 8, or to gpu.streams.max-size when that is smaller, so that setting only the
		 * maximum never contradicts it.
		 */
		private @Nullable Integer poolSize;

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
		 * acquired, counts in the pool statistics, and a pool whose every stream is held past it
		 * while callers wait is reported DOWN (the gpuStreams health contributor). On by default at
		 * 60 seconds, longer than any lease of an HTTP request can last (load balancers and clients
		 * give up on a request well before); raise it for work that holds a stream longer. Zero
		 * turns detection off (and saves capturing a stack per lease).
		 */
		private Duration leakDetectionThreshold = Duration.ofSeconds(60);

		/**
		 * Most streams leased at once per priority ('normal', 'high'), each 1 to max-size; no limit
		 * but the pool's maximum by default. A limit on 'normal' keeps streams free for 'high' work
		 * (a high-priority batcher), so bulk work cannot take the whole pool.
		 */
		private Map<StreamPriority, Integer> priorityLimits = new EnumMap<>(StreamPriority.class);

		public @Nullable Integer getPoolSize() {
			return this.poolSize;
		}

		public void setPoolSize(@Nullable Integer poolSize) {
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

		public Map<StreamPriority, Integer> getPriorityLimits() {
			return this.priorityLimits;
		}

		public void setPriorityLimits(Map<StreamPriority, Integer> priorityLimits) {
			this.priorityLimits = priorityLimits;
		}

	}

	/**
	 * One dynamic batcher: {@code gpu.batching.<name>.*}. The settings of Triton Inference Server's
	 * dynamic batcher, as {@link GpuBatcher.Builder} describes them; defaults and limits are
	 * {@link GpuBatcher.Settings}'.
	 */
	public static class Batcher {

		/** Most items per batch (1 to 65536). */
		private int maxBatchSize = 64;

		/**
		 * Longest time items are held in the hope of a fuller batch: while batches run, from the
		 * oldest item's arrival; right after a batch of n items, from its end and only until n items
		 * wait. Never applies to an item that finds the batcher idle.
		 */
		private Duration maxQueueDelay = Duration.ZERO;

		/** Most items waiting; beyond, submit fails at once (BatchQueueFullException, HTTP 503). */
		private int maxQueued = 1024;

		/** Priority of the batches' stream leases: 'normal' or 'high' (overtakes normal work at the pool). */
		private StreamPriority priority = StreamPriority.NORMAL;

		/** Longest wait of an item in the queue before it times out without running; 0 for none. */
		private Duration timeout = Duration.ZERO;

		/** Most batches run at once, each on its own stream and thread. */
		private int maxConcurrentBatches = 1;

		public int getMaxBatchSize() {
			return this.maxBatchSize;
		}

		public void setMaxBatchSize(int maxBatchSize) {
			this.maxBatchSize = maxBatchSize;
		}

		public Duration getMaxQueueDelay() {
			return this.maxQueueDelay;
		}

		public void setMaxQueueDelay(Duration maxQueueDelay) {
			this.maxQueueDelay = maxQueueDelay;
		}

		public int getMaxQueued() {
			return this.maxQueued;
		}

		public void setMaxQueued(int maxQueued) {
			this.maxQueued = maxQueued;
		}

		public StreamPriority getPriority() {
			return this.priority;
		}

		public void setPriority(StreamPriority priority) {
			this.priority = priority;
		}

		public Duration getTimeout() {
			return this.timeout;
		}

		public void setTimeout(Duration timeout) {
			this.timeout = timeout;
		}

		public int getMaxConcurrentBatches() {
			return this.maxConcurrentBatches;
		}

		public void setMaxConcurrentBatches(int maxConcurrentBatches) {
			this.maxConcurrentBatches = maxConcurrentBatches;
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
		private @Nullable Path cacheDir;

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

		public @Nullable Path getCacheDir() {
			return this.cacheDir;
		}

		public void setCacheDir(@Nullable Path cacheDir) {
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

	/** Copies between host and device: {@code gpu.copies.*}. */
	public static class Copies {

		/**
		 * Most page-locked staging memory that copies from and to Java arrays and buffers hold at
		 * once, per device (the staging cache is apart). A large copy holds a few chunks at a time and reuses
		 * them, so a copy of any size runs within it; a copy that finds no room waits (first come
		 * first served) up to gpu.copies.staging-timeout, then fails with StagingExhaustedException
		 * (HTTP 503). At least one copy chunk (2MB by default). Host buffers (allocateHost) do not
		 * count.
		 */
		private DataSize stagingBudget = DataSize.ofGigabytes(1);

		/**
		 * Longest wait of a copy for staging, then StagingExhaustedException: for room in
		 * gpu.copies.staging-budget, and, for a copy larger than the staging blocks it holds, for each
		 * of its own blocks to come back from its stream (behind a long kernel, as long as the kernel
		 * runs). Zero means do not wait: array copies larger than their blocks then fail whenever
		 * their stream has not passed an earlier chunk in time; copy such data through a host buffer.
		 */
		private Duration stagingTimeout = Duration.ofSeconds(30);

		public DataSize getStagingBudget() {
			return this.stagingBudget;
		}

		public void setStagingBudget(DataSize stagingBudget) {
			this.stagingBudget = stagingBudget;
		}

		public Duration getStagingTimeout() {
			return this.stagingTimeout;
		}

		public void setStagingTimeout(Duration stagingTimeout) {
			this.stagingTimeout = stagingTimeout;
		}

	}

	/** The CPU backend: {@code gpu.cpu.*}. */
	public static class Cpu {

		/**
		 * Worker threads of the CPU backend, which run kernel blocks in parallel. Defaults to the
		 * number of available processors.
		 */
		private @Nullable Integer threads;

		/**
		 * How many devices the CPU backend stands in for (1 to 64), ordinals 0 to n-1, each with
		 * its own worker threads (gpu.cpu.threads each) and an equal share of the memory budget,
		 * so that several-device code runs without a GPU. Open them with gpu.devices.
		 */
		private int devices = 1;

		public @Nullable Integer getThreads() {
			return this.threads;
		}

		public void setThreads(@Nullable Integer threads) {
			this.threads = threads;
		}

		public int getDevices() {
			return this.devices;
		}

		public void setDevices(int devices) {
			this.devices = devices;
		}

	}

	/** Problem details for GPU failures in web applications: {@code gpu.problem-details.*}. */
	public static class ProblemDetails {

		/**
		 * Whether GPU failures of request handlers are answered as RFC 9457 problem details (Spring
		 * MVC and WebFlux): pool exhausted 503 with Retry-After, out of device memory 503, a kernel
		 * failure 500 naming the kernel. Handlers of the application's own win either way.
		 */
		private boolean enabled = true;

		/**
		 * Retry-After of the 503 answer for a busy GPU (stream pool exhausted), in whole seconds,
		 * rounded up.
		 */
		private Duration retryAfter = Duration.ofSeconds(1);

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public Duration getRetryAfter() {
			return this.retryAfter;
		}

		public void setRetryAfter(Duration retryAfter) {
			this.retryAfter = retryAfter;
		}

	}

}
