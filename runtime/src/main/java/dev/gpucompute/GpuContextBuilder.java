package dev.gpucompute;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.listener.KernelLoad;
import dev.gpucompute.settings.CopySettings;
import dev.gpucompute.settings.CpuSettings;
import dev.gpucompute.settings.CudaSettings;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.InvalidSettingException;
import dev.gpucompute.settings.KernelSettings;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.settings.MetricsSettings;
import dev.gpucompute.settings.ShutdownSettings;
import dev.gpucompute.settings.StreamSettings;
import org.jspecify.annotations.Nullable;

/**
 * Configures and opens a {@link GpuContext}: {@code GpuContext.builder()...open()}. The settings of
 * each group (streams, copies, CPU backend, kernels, shutdown, metrics, CUDA memory) are records of
 * {@code dev.gpucompute.settings} that hold their defaults, limits and checks; the setters here map
 * onto them, value by value ({@link #maxSize(int)}) or a whole group at once ({@link #streams(StreamSettings)}).
 * Each setter checks its argument at once; {@link #open()} checks how they fit together (a pool size
 * within the maximum, a staging budget that holds a chunk). {@link #settings()} is the configuration as
 * an immutable value. Not thread-safe; a builder may open several contexts (each with the settings of
 * that moment).
 */
public final class GpuContextBuilder {

	private @Nullable Backend backend;

	private int device;

	private GpuListener listener = GpuListener.NONE;

	private List<KernelSource> kernels = List.of();

	/** Most streams leased at once per priority; a priority not here has no limit but the pool's maximum. */
	private final EnumMap<StreamPriority, Integer> priorityLimits = new EnumMap<>(StreamPriority.class);

	private StreamSettings streams = StreamSettings.DEFAULTS;

	private CopySettings copies = CopySettings.DEFAULTS;

	private CpuSettings cpu = CpuSettings.DEFAULTS;

	private CudaSettings cuda = CudaSettings.DEFAULTS;

	private KernelSettings kernelSettings = KernelSettings.DEFAULTS;

	private ShutdownSettings shutdown = ShutdownSettings.DEFAULTS;

	private MetricsSettings metrics = MetricsSettings.DEFAULTS;

	GpuContextBuilder() {
	}

	// ---- what to open ----------------------------------------------------------------------------

	/** {@code null} (the default) chooses automatically: CUDA when usable, else CPU. */
	public GpuContextBuilder backend(@Nullable Backend backend) {
		this.backend = backend;
		return this;
	}

	/** The device ordinal (default 0); {@link GpuDevices} replaces it by each device's. */
	public GpuContextBuilder device(int ordinal) {
		if (ordinal < 0) {
			throw new InvalidSettingException("device", InvalidSettingException.Problem.TOO_SMALL, 0,
					"Device ordinal must not be negative, got " + ordinal);
		}
		this.device = ordinal;
		return this;
	}

	/** Told of launches, leases, batches and memory (default: nobody listens, which costs nothing). */
	public GpuContextBuilder listener(GpuListener listener) {
		this.listener = Objects.requireNonNull(listener, "listener");
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

	// ---- streams: StreamSettings ------------------------------------------------------------------

	/** The stream settings as a whole (see {@link StreamSettings}), replacing those set before. */
	public GpuContextBuilder streams(StreamSettings streams) {
		this.streams = Objects.requireNonNull(streams, "streams");
		return this;
	}

	/**
	 * Streams created up front: 0 to {@value StreamSettings#MAX_STREAMS}, at most {@link #maxSize(int)}
	 * (default {@value StreamSettings#DEFAULT_POOL_SIZE}, or the maximum when that is smaller).
	 */
	public GpuContextBuilder poolSize(int poolSize) {
		this.streams = this.streams.withPoolSize(poolSize);
		return this;
	}

	/** Most streams the pool will create: 1 to {@value StreamSettings#MAX_STREAMS} (default {@value StreamSettings#DEFAULT_MAX_SIZE}). */
	public GpuContextBuilder maxSize(int maxSize) {
		this.streams = this.streams.withMaxSize(maxSize);
		return this;
	}

	/** Longest wait for a lease (default 30 s; zero: do not wait). */
	public GpuContextBuilder acquireTimeout(Duration timeout) {
		this.streams = this.streams.withAcquireTimeout(timeout);
		return this;
	}

	/** Which stream work goes to when no stream is current (default {@link DefaultStreamMode#PER_THREAD}). */
	public GpuContextBuilder defaultStream(DefaultStreamMode mode) {
		this.streams = this.streams.withDefaultStream(Objects.requireNonNull(mode, "mode"));
		return this;
	}

	/** A lease held longer than this logs its acquisition stack; zero (the default) turns it off. */
	public GpuContextBuilder leakDetectionThreshold(Duration threshold) {
		this.streams = this.streams.withLeakDetectionThreshold(threshold);
		return this;
	}

	/**
	 * Most pooled streams leased at once at {@code priority}: 1 to the pool's maximum (default: no
	 * limit but the maximum). A limit on {@link StreamPriority#NORMAL} keeps streams free for
	 * {@link StreamPriority#HIGH} work, so bulk work cannot take the whole pool. Callers beyond the
	 * limit wait like callers of a full pool (see {@link StreamPool}). {@link #open()} checks it
	 * against the maximum.
	 */
	public GpuContextBuilder priorityLimit(StreamPriority priority, int limit) {
		Objects.requireNonNull(priority, "priority");
		this.priorityLimits.put(priority, StreamSettings.checkPriorityLimit(limit, "priorityLimit(" + priority + ")"));
		return this;
	}

	// ---- copies: CopySettings ---------------------------------------------------------------------

	/** The copy settings as a whole (see {@link CopySettings}), replacing those set before. */
	public GpuContextBuilder copies(CopySettings copies) {
		this.copies = Objects.requireNonNull(copies, "copies");
		return this;
	}

	/**
	 * Most host memory for copies (page-locked on CUDA) kept for reuse between them: staging
	 * chunks and the memory of closed {@link HostBuffer}s (default 256 MiB); zero allocates and
	 * frees it for every copy and host buffer.
	 */
	public GpuContextBuilder stagingCache(long bytes) {
		this.copies = this.copies.withStagingCache(bytes);
		return this;
	}

	/**
	 * Bytes per chunk of array and buffer copies larger than one chunk (default 2 MiB): a multiple of
	 * {@value CopySettings#MIN_CHUNK} up to {@value CopySettings#MAX_CHUNK} (see {@link CopySettings#chunkSize()}).
	 */
	public GpuContextBuilder copyChunkSize(long bytes) {
		this.copies = this.copies.withChunkSize(bytes);
		return this;
	}

	/**
	 * Most staging memory (page-locked on CUDA) that array and buffer copies hold at once, in bytes
	 * (default 1 GiB): at least one chunk, which {@link #open()} checks (see
	 * {@link CopySettings#stagingBudget()}). Memory of host buffers does not count.
	 */
	public GpuContextBuilder stagingBudget(long bytes) {
		this.copies = this.copies.withStagingBudget(bytes);
		return this;
	}

	/**
	 * Longest wait of a copy for staging (default 30 s), then {@link StagingExhaustedException} (see
	 * {@link CopySettings#stagingTimeout()}).
	 */
	public GpuContextBuilder stagingTimeout(Duration timeout) {
		this.copies = this.copies.withStagingTimeout(timeout);
		return this;
	}

	/**
	 * Threads that pack and unpack the chunks of large copies besides the calling thread: 0 to
	 * {@value CopySettings#MAX_THREADS} (default: a quarter of the cores, 1 to 4).
	 */
	public GpuContextBuilder copyThreads(int threads) {
		this.copies = this.copies.withThreads(threads);
		return this;
	}

	// ---- the CPU backend: CpuSettings --------------------------------------------------------------

	/** The CPU backend's settings as a whole (see {@link CpuSettings}), replacing those set before. */
	public GpuContextBuilder cpu(CpuSettings cpu) {
		this.cpu = Objects.requireNonNull(cpu, "cpu");
		return this;
	}

	/** Worker threads of the CPU backend: 1 to {@value CpuSettings#MAX_THREADS} (default: the number of cores). */
	public GpuContextBuilder cpuThreads(int threads) {
		this.cpu = this.cpu.withThreads(threads);
		return this;
	}

	/**
	 * How many devices the CPU backend stands in for ({@code gpu.cpu.devices}): 1 to
	 * {@value CpuSettings#MAX_DEVICES}, default 1. Each has its own workers and, unless
	 * {@link #cpuMemoryBudget(long)} is set, an equal share of the default budget.
	 */
	public GpuContextBuilder cpuDevices(int devices) {
		this.cpu = this.cpu.withDevices(devices);
		return this;
	}

	/** How much memory the CPU backend may hand out as device memory; positive (see {@link CpuSettings#memoryBudget()}). */
	public GpuContextBuilder cpuMemoryBudget(long bytes) {
		this.cpu = this.cpu.withMemoryBudget(bytes);
		return this;
	}

	// ---- the CUDA backend: CudaSettings ------------------------------------------------------------

	/** The CUDA backend's settings as a whole (see {@link CudaSettings}), replacing those set before. */
	public GpuContextBuilder cuda(CudaSettings cuda) {
		this.cuda = Objects.requireNonNull(cuda, "cuda");
		return this;
	}

	/** Bytes the CUDA allocator keeps cached between frees (default: all); not negative. */
	public GpuContextBuilder memoryPoolReleaseThreshold(long bytes) {
		this.cuda = new CudaSettings(bytes);
		return this;
	}

	// ---- kernels: KernelSettings -------------------------------------------------------------------

	/** How kernels are compiled and loaded, as a whole (see {@link KernelSettings}), replacing what was set before. */
	public GpuContextBuilder kernelSettings(KernelSettings settings) {
		this.kernelSettings = Objects.requireNonNull(settings, "settings");
		return this;
	}

	/** Extra compiler options for CUDA C kernels; no element may be null. */
	public GpuContextBuilder compileOptions(List<String> options) {
		this.kernelSettings = this.kernelSettings.withCompileOptions(Objects.requireNonNull(options, "options"));
		return this;
	}

	/** Where compiled kernels are cached; {@code null} (the default) for no disk cache. */
	public GpuContextBuilder kernelCacheDir(Path dir) {
		this.kernelSettings = this.kernelSettings.withCacheDir(dir);
		return this;
	}

	/**
	 * How long a kernel's load step may take while this context has work in flight before the load
	 * counts as having waited for that work (default 5 ms; see {@link KernelSettings#loadWaitThreshold()}).
	 */
	public GpuContextBuilder kernelLoadWaitThreshold(Duration threshold) {
		this.kernelSettings = this.kernelSettings.withLoadWaitThreshold(threshold);
		return this;
	}

	// ---- shutdown: ShutdownSettings ----------------------------------------------------------------

	/** How the context closes, as a whole (see {@link ShutdownSettings}), replacing what was set before. */
	public GpuContextBuilder shutdown(ShutdownSettings shutdown) {
		this.shutdown = Objects.requireNonNull(shutdown, "shutdown");
		return this;
	}

	/** Longest wait at close for work in flight (default 30 s); work still pending then is abandoned. */
	public GpuContextBuilder drainTimeout(Duration timeout) {
		this.shutdown = new ShutdownSettings(timeout);
		return this;
	}

	// ---- metrics: MetricsSettings ------------------------------------------------------------------

	/** What the context measures, as a whole (see {@link MetricsSettings}), replacing what was set before. */
	public GpuContextBuilder metrics(MetricsSettings metrics) {
		this.metrics = Objects.requireNonNull(metrics, "metrics");
		return this;
	}

	/** Which launches are timed in device time (default {@link KernelTiming#SAMPLED}). */
	public GpuContextBuilder kernelTiming(KernelTiming timing) {
		this.metrics = this.metrics.withKernelTiming(Objects.requireNonNull(timing, "timing"));
		return this;
	}

	/**
	 * How often pooled streams are sampled for the utilisation statistic, and the window it averages
	 * over (default every 100 ms over 10 s). A zero period turns sampling off; otherwise the period is at
	 * least {@link MetricsSettings#MIN_UTILIZATION_SAMPLE_PERIOD} and the window at least the period.
	 */
	public GpuContextBuilder utilizationSampling(Duration period, Duration window) {
		this.metrics = this.metrics.withUtilizationSampling(period, window);
		return this;
	}

	// ---- the result --------------------------------------------------------------------------------

	/**
	 * The configuration so far, as an immutable value (for opening contexts, logging, tests), without
	 * the device ordinal: every device of {@link GpuDevices} opens with the same settings.
	 * @throws InvalidSettingException when values contradict each other (a pool size above the
	 * maximum, a staging budget smaller than a chunk, a priority limit above the maximum)
	 */
	public Settings settings() {
		return new Settings(this.backend, this.listener, this.kernels, this.priorityLimits, this.streams, this.copies,
				this.cpu, this.cuda, this.kernelSettings, this.shutdown, this.metrics);
	}

	/**
	 * Opens the device and creates the pool's streams.
	 * @throws BackendUnavailableException when the requested backend cannot run here
	 * @throws InvalidSettingException when values contradict each other
	 */
	public GpuContext open() {
		return open(settings(), this.device);
	}

	/** Opens a context on {@code device} (what {@link #open()} and {@link GpuDevices} do). */
	static GpuContext open(Settings settings, int device) {
		try {
			return (GpuContext) Implementation.OPEN.handle().invokeExact(settings, device);
		}
		catch (RuntimeException | Error ex) {
			throw ex;
		}
		catch (Throwable ex) {
			throw new java.lang.reflect.UndeclaredThrowableException(ex);
		}
	}

	/** Opens one context per ordinal, in the order given (what {@link GpuDevices#open} does). */
	static GpuDevices openDevices(java.util.function.IntFunction<Settings> settingsFor,
			java.util.Collection<Integer> ordinals) {
		try {
			return (GpuDevices) Implementation.OPEN_DEVICES.handle().invokeExact(settingsFor, ordinals);
		}
		catch (RuntimeException | Error ex) {
			throw ex;
		}
		catch (Throwable ex) {
			throw new java.lang.reflect.UndeclaredThrowableException(ex);
		}
	}

	/** How many devices {@code backend} has here (what {@link GpuDevices#deviceCount} answers). */
	static int deviceCount(@Nullable Backend backend, int cpuDevices) {
		try {
			return (int) Implementation.DEVICE_COUNT.handle().invokeExact(backend, cpuDevices);
		}
		catch (RuntimeException | Error ex) {
			throw ex;
		}
		catch (Throwable ex) {
			throw new java.lang.reflect.UndeclaredThrowableException(ex);
		}
	}

	/** Starts recording acquisitions (what {@link LeakTracker#start()} does). */
	static LeakTracker startLeakTracker() {
		try {
			return (LeakTracker) Implementation.START_LEAK_TRACKER.handle().invokeExact();
		}
		catch (RuntimeException | Error ex) {
			throw ex;
		}
		catch (Throwable ex) {
			throw new java.lang.reflect.UndeclaredThrowableException(ex);
		}
	}

	/**
	 * The doors of the runtime's implementation that the API's entry points go through: public static
	 * methods of {@code dev.gpucompute.internal.context.Engine}, found once by name through the class
	 * loader of the API itself (the runtime's jar holds both, also inside a Spring Boot fat jar). The
	 * API and its implementation ship together, so a public service interface for them to meet in
	 * would only be machinery in the API: this keeps the API free of any implementation type (a test
	 * checks it) without one. A door that cannot be found answers every call with the same
	 * {@link IllegalStateException} saying why (the jar is incomplete, or mixes versions).
	 */
	private record Implementation(java.lang.invoke.@Nullable MethodHandle found, @Nullable String problem, @Nullable Throwable cause) {

		static final String ENGINE = "dev.gpucompute.internal.context.Engine";

		static final Implementation OPEN = find("open", GpuContext.class, Settings.class, int.class);

		static final Implementation OPEN_DEVICES = find("openDevices", GpuDevices.class,
				java.util.function.IntFunction.class, java.util.Collection.class);

		static final Implementation DEVICE_COUNT = find("deviceCount", int.class, Backend.class, int.class);

		static final Implementation START_LEAK_TRACKER = find("startLeakTracker", LeakTracker.class);

		private static Implementation find(String name, Class<?> returns, Class<?>... parameters) {
			Class<?> engine;
			try {
				engine = Class.forName(ENGINE, true, GpuContextBuilder.class.getClassLoader());
			}
			catch (ClassNotFoundException ex) {
				return new Implementation(null, "The implementation of the gpu-compute API is missing: no " + ENGINE
						+ " on the class path (an incomplete gpu-compute-runtime jar?)", ex);
			}
			catch (LinkageError ex) {
				return new Implementation(null, "The implementation of the gpu-compute API could not be loaded: " + ex,
						ex);
			}
			try {
				return new Implementation(java.lang.invoke.MethodHandles.publicLookup()
					.findStatic(engine, name, java.lang.invoke.MethodType.methodType(returns, parameters)), null, null);
			}
			catch (ReflectiveOperationException ex) {
				return new Implementation(null, "The implementation of the gpu-compute API (" + ENGINE
						+ ") does not match the API: no public static " + name + " " + java.lang.invoke.MethodType
							.methodType(returns, parameters) + " (gpu-compute jars of different versions?)", ex);
			}
		}

		java.lang.invoke.MethodHandle handle() {
			if (this.found == null) {
				throw new IllegalStateException(this.problem, this.cause);
			}
			return this.found;
		}

	}

	/**
	 * The configuration of a context, as {@link GpuContextBuilder#settings()} collects it: what the
	 * runtime opens a context with, on whichever device. Immutable; the records of each group checked
	 * their own values, and this checks how they fit together.
	 *
	 * @param backend the backend asked for, or {@code null} to choose automatically
	 * @param listener told of launches, leases, batches and memory
	 * @param kernels kernels loaded when the context opens
	 * @param priorityLimits most streams leased at once per priority; a priority missing has no limit
	 * but the pool's maximum
	 * @param streams the stream pool and the default stream
	 * @param copies copies and their staging memory
	 * @param cpu the CPU backend
	 * @param cuda the CUDA backend's memory
	 * @param kernelSettings how kernels are compiled and loaded
	 * @param shutdown how the context closes
	 * @param metrics what the context measures
	 */
	public record Settings(@Nullable Backend backend, GpuListener listener, List<KernelSource> kernels,
			Map<StreamPriority, Integer> priorityLimits, StreamSettings streams, CopySettings copies, CpuSettings cpu,
			CudaSettings cuda, KernelSettings kernelSettings, ShutdownSettings shutdown, MetricsSettings metrics) {

		/**
		 * Checks that the values fit together and copies the collections.
		 * @throws NullPointerException when a value other than the backend is missing
		 * @throws InvalidSettingException when the pool size or a priority limit exceeds the pool's
		 * maximum, or the staging budget does not hold a chunk
		 */
		public Settings {
			Objects.requireNonNull(listener, "listener");
			kernels = List.copyOf(kernels);
			Objects.requireNonNull(streams, "streams").checked();
			Objects.requireNonNull(copies, "copies").checked();
			Objects.requireNonNull(cpu, "cpu");
			Objects.requireNonNull(cuda, "cuda");
			Objects.requireNonNull(kernelSettings, "kernelSettings");
			Objects.requireNonNull(shutdown, "shutdown");
			Objects.requireNonNull(metrics, "metrics");
			EnumMap<StreamPriority, Integer> limits = new EnumMap<>(StreamPriority.class);
			priorityLimits.forEach((priority, limit) -> {
				String name = "priorityLimit(" + Objects.requireNonNull(priority, "priority") + ")";
				StreamSettings.checkPriorityLimit(Objects.requireNonNull(limit, name), name);
				dev.gpucompute.settings.Limits.notAbove(limit, name, streams.maxSize(), "maxSize");
				limits.put(priority, limit);
			});
			priorityLimits = Collections.unmodifiableMap(limits);
		}

		/** The most streams leased at once at {@code priority}: its limit, or the pool's maximum. */
		public int priorityLimit(StreamPriority priority) {
			return this.priorityLimits.getOrDefault(priority, this.streams.maxSize());
		}

	}

}
