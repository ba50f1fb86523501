package dev.gpucompute;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Configures and opens a {@link GpuContext}: {@code GpuContext.builder()...open()}. Each setter
 * checks its argument at once; {@link #open()} checks how they fit together. {@link #settings()} is
 * the configuration as an immutable value. Not thread-safe; a builder may open several contexts
 * (each with the settings of that moment).
 */
public final class GpuContextBuilder {

	private Backend backend;

	private int device;

	private int poolSize = 8;

	private int maxSize = 32;

	private Duration acquireTimeout = Duration.ofSeconds(30);

	private DefaultStreamMode defaultStream = DefaultStreamMode.PER_THREAD;

	private Duration leakDetectionThreshold = Duration.ZERO;

	private Duration drainTimeout = Duration.ofSeconds(30);

	private int cpuThreads = Runtime.getRuntime().availableProcessors();

	/** 0: the backend's default ({@code BackendProvider.defaultMemoryBudget()}), shared by the CPU devices. */
	private long cpuMemoryBudget;

	private long memoryPoolReleaseThreshold = Long.MAX_VALUE;

	private List<String> compileOptions = List.of();

	private Path kernelCacheDir;

	private KernelTiming kernelTiming = KernelTiming.SAMPLED;

	private GpuListener listener = GpuListener.NONE;

	private Duration utilizationSamplePeriod = Duration.ofMillis(100);

	private long stagingCacheBytes = 256L << 20;

	private long copyChunkBytes = 2L << 20;

	private long stagingBudgetBytes = GpuContext.DEFAULT_STAGING_BUDGET;

	private Duration stagingTimeout = Duration.ofSeconds(30);

	private int copyThreads = defaultCopyThreads();

	private long waitSpinNanos = -1;

	private Duration utilizationWindow = Duration.ofSeconds(10);

	private int cpuDevices = 1;

		private List<KernelSource> kernels = List.of();

	private Duration kernelLoadWaitThreshold = Duration.ofMillis(5);

	/** Per priority (by ordinal): most streams leased at once; unlimited (the pool's maximum) by default. */
	private int[] priorityLimits = unlimited();

	GpuContextBuilder() {
	}

	private static int[] unlimited() {
		int[] limits = new int[StreamPriority.values().length];
		java.util.Arrays.fill(limits, GpuContext.MAX_STREAMS);
		return limits;
	}

	/**
	 * How many devices the CPU backend stands in for ({@code gpu.cpu.devices}): 1 to
	 * {@value GpuContext#MAX_CPU_DEVICES}, default 1. Each has its own workers and, unless
	 * {@link #cpuMemoryBudget(long)} is set, an equal share of the default budget.
	 */
	public GpuContextBuilder cpuDevices(int devices) {
		this.cpuDevices = Checks.within(devices, 1, GpuContext.MAX_CPU_DEVICES, "cpuDevices");
		return this;
	}

	/** {@code null} (the default) chooses automatically: CUDA when usable, else CPU. */
	public GpuContextBuilder backend(Backend backend) {
		this.backend = backend;
		return this;
	}

	public GpuContextBuilder device(int ordinal) {
		if (ordinal < 0) {
			throw new IllegalArgumentException("Device ordinal must not be negative, got " + ordinal);
		}
		this.device = ordinal;
		return this;
	}

	/** Streams created up front: 0 to {@value GpuContext#MAX_STREAMS}, at most {@link #maxSize(int)}. */
	public GpuContextBuilder poolSize(int poolSize) {
		this.poolSize = Checks.within(poolSize, 0, GpuContext.MAX_STREAMS, "poolSize");
		return this;
	}

	/** Most streams the pool will create: 1 to {@value GpuContext#MAX_STREAMS}. */
	public GpuContextBuilder maxSize(int maxSize) {
		this.maxSize = Checks.within(maxSize, 1, GpuContext.MAX_STREAMS, "maxSize");
		return this;
	}

	/**
	 * Most pooled streams leased at once at {@code priority}, 1 to {@value GpuContext#MAX_STREAMS}
	 * (default: no limit but the pool's maximum): a limit on {@link StreamPriority#NORMAL} keeps
	 * streams free for {@link StreamPriority#HIGH} work, so bulk work cannot take the whole pool.
	 * Callers beyond the limit wait like callers of a full pool (see {@link StreamPool}).
	 */
	public GpuContextBuilder priorityLimit(StreamPriority priority, int limit) {
		Objects.requireNonNull(priority, "priority");
		this.priorityLimits[priority.ordinal()] = Checks.within(limit, 1, GpuContext.MAX_STREAMS,
				"priorityLimit(" + priority + ")");
		return this;
	}

	/** Longest wait for a lease (zero: do not wait). */
	public GpuContextBuilder acquireTimeout(Duration timeout) {
		Checks.nanos(timeout, "acquireTimeout");
		this.acquireTimeout = timeout;
		return this;
	}

	public GpuContextBuilder defaultStream(DefaultStreamMode mode) {
		this.defaultStream = Objects.requireNonNull(mode, "mode");
		return this;
	}

	/** A lease held longer than this logs its acquisition stack; zero turns it off. */
	public GpuContextBuilder leakDetectionThreshold(Duration threshold) {
		Checks.nanos(threshold, "leakDetectionThreshold");
		this.leakDetectionThreshold = threshold;
		return this;
	}

	/** Longest wait at close for work in flight; work still pending then is abandoned. */
	public GpuContextBuilder drainTimeout(Duration timeout) {
		Checks.nanos(timeout, "drainTimeout");
		this.drainTimeout = timeout;
		return this;
	}

	/** Worker threads of the CPU backend: 1 to {@value GpuContext#MAX_CPU_THREADS} (default: the number of cores). */
	public GpuContextBuilder cpuThreads(int threads) {
		this.cpuThreads = Checks.within(threads, 1, GpuContext.MAX_CPU_THREADS, "cpuThreads");
		return this;
	}

	/**
	 * How much memory the CPU backend may hand out as device memory. Default: half the machine's
	 * physical memory (the container's limit where one applies) where the backend allocates through
	 * JNA, outside the JVM's direct-memory limit; the max heap size (the direct-memory limit's
	 * default) where it falls back to direct buffers (the CPU backend's
	 * {@code CpuBackendProvider.machineMemoryBudget()}); with several CPU devices
	 * ({@link #cpuDevices(int)}) each gets an equal share of that default, or this whole budget when set.
	 */
	public GpuContextBuilder cpuMemoryBudget(long bytes) {
		if (bytes < 1) {
			throw new IllegalArgumentException("cpuMemoryBudget must be positive, got " + bytes);
		}
		this.cpuMemoryBudget = bytes;
		return this;
	}

	/** Bytes the CUDA allocator keeps cached between frees (default: all); not negative. */
	public GpuContextBuilder memoryPoolReleaseThreshold(long bytes) {
		if (bytes < 0) {
			throw new IllegalArgumentException("memoryPoolReleaseThreshold must not be negative, got " + bytes);
		}
		this.memoryPoolReleaseThreshold = bytes;
		return this;
	}

	/** Extra compiler options for CUDA C kernels; no element may be null. */
	public GpuContextBuilder compileOptions(List<String> options) {
		Objects.requireNonNull(options, "options");
		for (int i = 0; i < options.size(); i++) {
			if (options.get(i) == null) {
				throw new NullPointerException("compileOptions[" + i + "] is null");
			}
		}
		this.compileOptions = List.copyOf(options);
		return this;
	}

	/**
	 * Kernels to load (compile where needed) when the context opens, in this order, replacing any
	 * named before. Loading waits for the work in flight on a CUDA device (the driver's module load
	 * does), so a kernel loaded while work runs stalls its caller behind all of it: name here every
	 * kernel the application launches, and no launch will load one later (see {@link KernelLoad}).
	 * With {@link GpuDevices}, every device loads them. A kernel that does not load fails
	 * {@link #open()}, which closes the context again.
	 * @throws NullPointerException when a source is {@code null}
	 */
	public GpuContextBuilder kernels(KernelSource... sources) {
		Objects.requireNonNull(sources, "sources");
		return kernels(java.util.Arrays.asList(sources));
	}

	/** {@link #kernels(KernelSource...)} from a collection. */
	public GpuContextBuilder kernels(java.util.Collection<? extends KernelSource> sources) {
		Objects.requireNonNull(sources, "sources");
		List<KernelSource> copy = new ArrayList<>(sources.size());
		for (KernelSource source : sources) {
			if (source == null) {
				throw new NullPointerException("kernels[" + copy.size() + "] is null");
			}
			copy.add(source);
		}
		this.kernels = List.copyOf(copy);
		return this;
	}

	/**
	 * How long a kernel's load step (on CUDA the driver's module load) may take while this context
	 * has work in flight before the load counts as having waited for that work: logged at WARN and
	 * reported with {@link KernelLoad#waited()}. Default 5 ms (a prebuilt fatbin loads in under
	 * 0.5 ms on an idle H200); zero reports every load made while work is in flight.
	 */
	public GpuContextBuilder kernelLoadWaitThreshold(Duration threshold) {
		Checks.nanos(threshold, "kernelLoadWaitThreshold");
		this.kernelLoadWaitThreshold = threshold;
		return this;
	}

	/** Where compiled kernels are cached; {@code null} for no disk cache. */
	public GpuContextBuilder kernelCacheDir(Path dir) {
		this.kernelCacheDir = dir;
		return this;
	}

	public GpuContextBuilder kernelTiming(KernelTiming timing) {
		this.kernelTiming = Objects.requireNonNull(timing, "timing");
		return this;
	}

	public GpuContextBuilder listener(GpuListener listener) {
		this.listener = Objects.requireNonNull(listener, "listener");
		return this;
	}

	/**
	 * How often pooled streams are sampled for the utilisation statistic, and the window it
	 * averages over. A zero period turns sampling off; otherwise the period is at least
	 * {@link GpuContext#MIN_UTILIZATION_SAMPLE_PERIOD} (each sample queries every pooled stream) and
	 * the window at least the period.
	 */
	public GpuContextBuilder utilizationSampling(Duration period, Duration window) {
		Checks.nanos(period, "period");
		Checks.nanos(window, "window");
		if (!period.isZero()) {
			if (period.compareTo(GpuContext.MIN_UTILIZATION_SAMPLE_PERIOD) < 0) {
				throw new IllegalArgumentException("The utilisation sampling period must be zero (off) or at least "
						+ GpuContext.MIN_UTILIZATION_SAMPLE_PERIOD + ", got " + period);
			}
			if (window.compareTo(period) < 0) {
				throw new IllegalArgumentException("The utilisation window (" + window
						+ ") must be at least the sampling period (" + period + ")");
			}
		}
		this.utilizationSamplePeriod = period;
		this.utilizationWindow = window;
		return this;
	}

	/**
	 * Most host memory for copies (page-locked on CUDA) kept for reuse between them: staging
	 * chunks and the memory of closed {@link HostBuffer}s (default 256 MiB); zero allocates and
	 * frees it for every copy and host buffer.
	 */
	public GpuContextBuilder stagingCache(long bytes) {
		if (bytes < 0) {
			throw new IllegalArgumentException("stagingCache must not be negative, got " + bytes);
		}
		this.stagingCacheBytes = bytes;
		return this;
	}

	/**
	 * Bytes per chunk of array and buffer copies larger than one chunk, which go through staging
	 * memory in chunks so that packing on the host overlaps the transfer (default 2 MiB): a
	 * multiple of {@value GpuContext#MIN_COPY_CHUNK} up to {@value GpuContext#MAX_COPY_CHUNK}.
	 * Copies of at most one chunk go in one step.
	 */
	public GpuContextBuilder copyChunkSize(long bytes) {
		this.copyChunkBytes = ContextSettings.checkCopyChunk(bytes);
		return this;
	}

	/**
	 * Most staging memory (page-locked on CUDA) that array and buffer copies hold at once, in bytes
	 * (default {@value GpuContext#DEFAULT_STAGING_BUDGET}, 1 GiB): at least one chunk
	 * ({@link #copyChunkSize(long)}), which {@link #open()} checks. A copy of at most one chunk
	 * holds one block of its size; a larger copy holds a few chunks at a time (two or more when the
	 * budget has room, up to 8 or two per copy thread and caller) and reuses each once the stream
	 * has passed it, so a copy of any size runs within any budget. A copy that finds no room waits,
	 * first come first served, up to {@link #stagingTimeout(Duration)}, then fails with
	 * {@link StagingExhaustedException}. Memory from {@link GpuContext#allocateHost(long)} does
	 * not count: it is the application's, held as long as it chooses.
	 */
	public GpuContextBuilder stagingBudget(long bytes) {
		if (bytes < GpuContext.MIN_COPY_CHUNK) {
			throw new IllegalArgumentException("stagingBudget must be at least " + GpuContext.MIN_COPY_CHUNK + " bytes, got " + bytes);
		}
		this.stagingBudgetBytes = bytes;
		return this;
	}

	/**
	 * Longest wait of a copy for staging (default 30 s, like a stream lease's), then
	 * {@link StagingExhaustedException}: for room in the staging budget, and, for a copy larger than
	 * the staging blocks it holds, for each of its own blocks to come back from its stream (its
	 * earlier chunks done), which behind a long kernel is as long as the kernel runs. Zero fails at
	 * once when there is no room or no block: then array and buffer copies larger than their blocks
	 * (up to 8 chunks, or two per packing thread) fail whenever their stream has not passed an
	 * earlier chunk in time, so copy such data through a {@link HostBuffer}.
	 */
	public GpuContextBuilder stagingTimeout(Duration timeout) {
		Checks.nanos(timeout, "stagingTimeout");
		this.stagingTimeout = timeout;
		return this;
	}

	/**
	 * Threads that pack and unpack the chunks of large copies besides the calling thread: 0 to
	 * {@value GpuContext#MAX_COPY_THREADS} (default: a quarter of the cores, 1 to 4). They start
	 * when a copy needs them and end when idle for a few seconds.
	 */
	public GpuContextBuilder copyThreads(int threads) {
		this.copyThreads = Checks.within(threads, 0, GpuContext.MAX_COPY_THREADS, "copyThreads");
		return this;
	}

	/**
	 * How long a thread waiting for a copy's future spins for its completion;
	 * -1 (the default): 100 µs on CUDA, none on the CPU backend. Tests set it to run the waiter's
	 * path on the CPU backend.
	 */
	GpuContextBuilder waitSpinNanos(long nanos) {
		this.waitSpinNanos = nanos;
		return this;
	}

	private static int defaultCopyThreads() {
		return Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 4));
	}

	/** The configuration so far, as an immutable value (for opening contexts, logging, tests). */
	public ContextSettings settings() {
		return new ContextSettings(this.backend, this.device, this.poolSize, this.maxSize, this.acquireTimeout,
				this.defaultStream, this.leakDetectionThreshold, this.drainTimeout, this.cpuThreads, this.cpuMemoryBudget,
				this.memoryPoolReleaseThreshold, this.compileOptions, this.kernelCacheDir, this.kernelTiming, this.listener,
				this.utilizationSamplePeriod, this.utilizationWindow, this.stagingCacheBytes, this.copyChunkBytes,
				this.stagingBudgetBytes, this.stagingTimeout, this.copyThreads, this.waitSpinNanos, this.cpuDevices,
				this.kernels, this.kernelLoadWaitThreshold, ContextSettings.limits(this.priorityLimits));
	}

	/**
	 * Opens the device and creates {@code poolSize} streams.
	 * @throws BackendUnavailableException when the requested backend cannot run here
	 * @throws IllegalArgumentException when sizes contradict each other
	 */
	public GpuContext open() {
		return runtime().open(settings());
	}

	/**
	 * The implementation of the API ({@link GpuRuntime}), found once with {@link java.util.ServiceLoader}
	 * through the class loader of the API itself (the runtime's jar holds both, also inside a Spring
	 * Boot fat jar). Thread-safe.
	 * @throws IllegalStateException on every call when there is none (the gpu-compute-runtime jar is
	 * incomplete or its service file was stripped) or it cannot be created, saying which
	 */
	static GpuRuntime runtime() {
		return Implementation.LOOKUP.get();
	}

	/** The outcome of the one lookup: the implementation, or why there is none (kept for every caller). */
	private record Implementation(GpuRuntime runtime, String problem, Throwable cause) {

		static final Implementation LOOKUP = find();

		private static Implementation find() {
			try {
				return java.util.ServiceLoader.load(GpuRuntime.class, GpuRuntime.class.getClassLoader())
					.findFirst()
					.map((runtime) -> new Implementation(runtime, null, null))
					.orElseGet(() -> new Implementation(null, "No implementation of dev.gpucompute.GpuRuntime on the "
							+ "class path: gpu-compute-runtime's META-INF/services/dev.gpucompute.GpuRuntime is missing "
							+ "(a jar repackaged without its service files?)", null));
			}
			catch (java.util.ServiceConfigurationError ex) {
				return new Implementation(null, "The implementation of dev.gpucompute.GpuRuntime could not be created: "
						+ ex.getMessage(), ex);
			}
		}

		GpuRuntime get() {
			if (this.runtime == null) {
				throw new IllegalStateException(this.problem, this.cause);
			}
			return this.runtime;
		}

	}

}
