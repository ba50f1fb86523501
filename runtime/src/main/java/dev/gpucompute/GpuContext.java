package dev.gpucompute;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.spi.Availability;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.Backends;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeStream;

/**
 * One device, opened for the whole application: owns the backend, the {@link StreamPool}, the
 * {@link EventRegistry}, the loaded kernels and the device memory of its {@link DeviceBuffer}s.
 *
 * <p>Open one with {@link #builder()}; in Spring it is a singleton bean. It is thread-safe. The
 * application owns it and closes it once; {@link #close()} is idempotent and tears down in order:
 * stop accepting work, drain the streams (up to the drain timeout), destroy events, destroy pooled
 * streams, free memory, release the device. Every stream, event, buffer and kernel of a closed
 * context raises {@link ContextClosedException} on use, and its {@code close()} is a no-op.
 */
public final class GpuContext implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(GpuContext.class);

	private static final AtomicInteger IDS = new AtomicInteger();

	/** How often the device time of timed launches is read (the delay before it reaches listeners). */
	private static final long TIMING_READ_MILLIS = 20;

	private enum State {

		OPEN, CLOSING, CLOSED

	}

	private final int id = IDS.incrementAndGet();

	private final DeviceBackend backend;

	private final DeviceInfo info;

	private final String backendReason;

	private final DefaultStreamMode defaultStreamMode;

	private final Duration drainTimeout;

	private final GpuListener listener;

	private final KernelTiming kernelTiming;

	private final ScheduledThreadPoolExecutor housekeeping;

	private final ExecutorService completions;

	private final EventRegistry events;

	private final StreamPool pool;

	private final ContextLauncher launcher;

	private final GpuStream legacyStream;

	private final ThreadLocal<GpuStream> perThreadStream;

	private final Set<DeviceBuffer.State> buffers = ConcurrentHashMap.newKeySet();

	private final StagingPool staging;

	private final boolean recordLeakSites;

	private volatile State state = State.OPEN;

	private GpuContext(Builder builder, DeviceBackend backend, String backendReason) {
		this.backend = backend;
		this.info = backend.info();
		this.backendReason = backendReason;
		this.defaultStreamMode = builder.defaultStream;
		this.drainTimeout = builder.drainTimeout;
		this.listener = builder.listener;
		this.kernelTiming = builder.kernelTiming;
		String prefix = "gpu-" + this.id + "-";
		this.housekeeping = new ScheduledThreadPoolExecutor(1, daemon(prefix + "housekeeping"));
		this.housekeeping.setRemoveOnCancelPolicy(true);
		this.completions = Executors.newCachedThreadPool(daemon(prefix + "completion"));
		this.staging = new StagingPool(backend, builder.stagingCacheBytes);
		this.recordLeakSites = builder.leakDetectionThreshold.compareTo(Duration.ZERO) > 0;
		this.events = new EventRegistry(this, this.recordLeakSites);
		this.pool = new StreamPool(this, builder.poolSize, builder.maxSize, builder.acquireTimeout,
				builder.leakDetectionThreshold);
		this.launcher = new ContextLauncher(this);
		this.legacyStream = (this.defaultStreamMode == DefaultStreamMode.LEGACY)
				? new GpuStream(this, backend.defaultStream(DefaultStreamMode.LEGACY), StreamKind.DEFAULT_LEGACY,
						StreamPriority.NORMAL, null, null)
				: null;
		this.perThreadStream = ThreadLocal.withInitial(() -> new GpuStream(this,
				backend.defaultStream(DefaultStreamMode.PER_THREAD), StreamKind.DEFAULT_PER_THREAD,
				StreamPriority.NORMAL, null, Thread.currentThread()));
		if (this.kernelTiming != KernelTiming.OFF) {
			this.housekeeping.scheduleWithFixedDelay(() -> this.launcher.drainTimings(false), TIMING_READ_MILLIS,
					TIMING_READ_MILLIS, TimeUnit.MILLISECONDS);
		}
		long period = builder.utilizationSamplePeriod.toNanos();
		if (period > 0) {
			double alpha = 1 - Math.exp(-(double) period / builder.utilizationWindow.toNanos());
			this.housekeeping.scheduleAtFixedRate(() -> this.pool.sampleBusy(alpha), period, period,
					TimeUnit.NANOSECONDS);
		}
	}

	private static java.util.concurrent.ThreadFactory daemon(String prefix) {
		AtomicInteger n = new AtomicInteger();
		return (runnable) -> {
			Thread thread = new Thread(runnable, prefix + "-" + n.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		};
	}

	/** A builder with the defaults of DESIGN.md: auto backend, device 0, pool 8..32, 30 s timeouts. */
	public static Builder builder() {
		return new Builder();
	}

	/**
	 * Which backend {@code auto} would choose for this device ordinal, and why; touches no device
	 * beyond a probe.
	 */
	public static Selection select(Backend requested, int ordinal) {
		if (requested == Backend.CPU) {
			BackendProvider cpu = Backends.provider(Backend.CPU);
			Availability availability = cpu.probe(ordinal);
			return new Selection(Backend.CPU, cpu, availability, "CPU backend requested");
		}
		BackendProvider cuda = Backends.provider(Backend.CUDA);
		Availability availability = (cuda != null) ? cuda.probe(ordinal)
				: Availability.no("JCuda is not on the class path (add org.jcuda:jcuda and jcuda-natives)");
		if (requested == Backend.CUDA) {
			return new Selection(Backend.CUDA, cuda, availability, "CUDA backend requested");
		}
		if (availability.available()) {
			return new Selection(Backend.CUDA, cuda, availability, "auto: CUDA device found (" + availability.reason() + ")");
		}
		BackendProvider cpu = Backends.provider(Backend.CPU);
		if (availability.broken()) {
			return new Selection(Backend.CPU, cpu, cpu.probe(0), "auto: falling back to CPU although CUDA is installed "
					+ "here, because it cannot be used: " + availability.reason(), true);
		}
		return new Selection(Backend.CPU, cpu, cpu.probe(0),
				"auto: falling back to CPU because CUDA is unavailable: " + availability.reason());
	}

	/**
	 * The outcome of backend selection.
	 *
	 * @param backend the backend chosen
	 * @param provider its provider, or {@code null} when not on the class path
	 * @param availability whether it can run, and why not
	 * @param reason the one-line explanation that is logged
	 * @param warning whether the choice deserves a warning: {@code auto} fell back to the CPU although
	 * CUDA is installed here (a driver or device is present but unusable)
	 */
	public record Selection(Backend backend, BackendProvider provider, Availability availability, String reason,
			boolean warning) {

		/** A selection without a warning. */
		public Selection(Backend backend, BackendProvider provider, Availability availability, String reason) {
			this(backend, provider, availability, reason, false);
		}

	}

	// ---- accessors ----------------------------------------------------------------------

	public Backend backend() {
		return this.info.backend();
	}

	/** Why this backend was chosen (one line, also logged at open). */
	public String backendReason() {
		return this.backendReason;
	}

	public DeviceInfo device() {
		return this.info;
	}

	public StreamPool streams() {
		return this.pool;
	}

	public EventRegistry events() {
		return this.events;
	}

	public GpuLauncher launcher() {
		return this.launcher;
	}

	public DefaultStreamMode defaultStreamMode() {
		return this.defaultStreamMode;
	}

	public KernelTiming kernelTiming() {
		return this.kernelTiming;
	}

	/**
	 * The default stream of the calling thread: its own in {@link DefaultStreamMode#PER_THREAD} mode
	 * (usable only from that thread), the shared legacy stream otherwise.
	 */
	public GpuStream defaultStream() {
		ensureOpen();
		return (this.legacyStream != null) ? this.legacyStream : this.perThreadStream.get();
	}

	/** A snapshot of device memory. */
	public MemoryInfo memory() {
		ensureOpen();
		return this.backend.memoryInfo();
	}

	/** Whether the context is open and the device has not hit a sticky error. */
	public boolean isHealthy() {
		return healthProblem() == null;
	}

	/** Why the context is unhealthy (closed, sticky device error), or {@code null} when healthy. */
	public String healthProblem() {
		if (this.state != State.OPEN) {
			return "GPU context is " + this.state.name().toLowerCase(java.util.Locale.ROOT);
		}
		return this.backend.healthProblem();
	}

	public boolean isClosed() {
		return this.state != State.OPEN;
	}

	/** Blocks until all work on every stream of this context's device is done. */
	public void synchronize() {
		ensureOpen();
		this.backend.synchronizeDevice();
	}

	// ---- internals shared with the handles ---------------------------------------------

	void ensureOpen() {
		if (this.state != State.OPEN) {
			throw new ContextClosedException("GPU context #" + this.id + " (" + this.info.backend() + " device "
					+ this.info.ordinal() + ") is closed");
		}
	}

	void ensureSame(GpuContext other, String what) {
		ensureSame(other, what, "");
	}

	/**
	 * Rejects a handle of another context. The message is put together only on failure, since this
	 * runs on every launch.
	 */
	void ensureSame(GpuContext other, String what, String name) {
		if (other != this) {
			throw new ContextClosedException(what + name + " belongs to another GPU context (#" + other.id
					+ "); it cannot be used with context #" + this.id);
		}
	}

	DeviceBackend backendHandle() {
		return this.backend;
	}

	ContextLauncher launcherImpl() {
		return this.launcher;
	}

	GpuListener listener() {
		return this.listener;
	}

	ScheduledThreadPoolExecutor housekeeping() {
		return this.housekeeping;
	}

	/**
	 * Runs {@code action} off the backend's callback thread once {@code stream}'s work so far is done;
	 * the failure of that work, if any, is passed along.
	 */
	void whenDone(NativeStream stream, java.util.function.Consumer<GpuException> action) {
		stream.whenDone((failure) -> {
			try {
				this.completions.execute(() -> action.accept(failure));
			}
			catch (java.util.concurrent.RejectedExecutionException ex) {
				// Closing: still never on the backend's callback thread, where driver calls are refused.
				Thread thread = new Thread(() -> action.accept(failure), "gpu-" + this.id + "-late-completion");
				thread.setDaemon(true);
				thread.start();
			}
		});
	}

	/** Whether acquisition sites are recorded for the leak report (leak detection is on). */
	boolean recordsLeakSites() {
		return this.recordLeakSites;
	}

	StagingPool staging() {
		return this.staging;
	}

	void track(DeviceBuffer.State buffer) {
		this.buffers.add(buffer);
	}

	void untrack(DeviceBuffer.State buffer) {
		this.buffers.remove(buffer);
	}

	int id() {
		return this.id;
	}

	// ---- shutdown --------------------------------------------------------------------------

	/**
	 * Closes the context: stops accepting work, waits up to the drain timeout for work in flight,
	 * then destroys events, pooled streams and buffers and releases the device. Idempotent.
	 */
	@Override
	public void close() {
		synchronized (this) {
			if (this.state != State.OPEN) {
				return;
			}
			this.state = State.CLOSING;
		}
		try {
			this.pool.stopAccepting();
			awaitIdle(this.drainTimeout);
			this.housekeeping.shutdownNow();
			awaitQuietly(this.housekeeping);
			this.launcher.drainTimings(true);
			this.completions.shutdown();
			awaitQuietly(this.completions);
			this.staging.close();
			this.events.destroyAll();
			this.pool.destroyAll();
			freeBuffers();
		}
		finally {
			this.state = State.CLOSED;
			try {
				this.backend.close();
			}
			catch (RuntimeException ex) {
				log.warn("Releasing {} device {} failed", this.info.backend(), this.info.ordinal(), ex);
			}
			log.info("Closed GPU context #{} ({} device {})", this.id, this.info.backend(), this.info.ordinal());
		}
	}

	/**
	 * Stops handing out stream leases and waits up to {@code timeout} for the work already enqueued
	 * on the device to finish, releasing nothing: the first half of {@link #close()}, for containers
	 * that stop work in one phase and release resources in a later one (Spring stops its lifecycle
	 * beans before it destroys beans). Leases already held stay usable until they are closed, and
	 * launches on them or on default streams still run; acquiring a lease afterwards raises
	 * {@link ContextClosedException}. Thread-safe and idempotent; {@link #close()} afterwards still
	 * waits for whatever was enqueued after this call.
	 * @param timeout longest wait for the device to become idle
	 * @return whether the device became idle within the timeout (also {@code true} when closed)
	 */
	public boolean drain(Duration timeout) {
		Objects.requireNonNull(timeout, "timeout");
		if (this.state == State.CLOSED) {
			return true;
		}
		this.pool.stopAccepting();
		return awaitIdle(timeout);
	}

	private boolean awaitIdle(Duration timeout) {
		CompletableFuture<Void> drained = CompletableFuture.runAsync(this.backend::synchronizeDevice,
				(runnable) -> {
					Thread thread = new Thread(runnable, "gpu-" + this.id + "-drain");
					thread.setDaemon(true);
					thread.start();
				});
		try {
			drained.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
			return true;
		}
		catch (TimeoutException ex) {
			log.warn("GPU work still in flight after the drain timeout of {}", timeout);
			return false;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
		catch (java.util.concurrent.ExecutionException ex) {
			log.warn("A kernel failed while the context drained: {}", ex.getCause().getMessage());
			return true;
		}
	}

	private static void awaitQuietly(ExecutorService executor) {
		try {
			if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
				executor.shutdownNow();
			}
		}
		catch (InterruptedException ex) {
			executor.shutdownNow();
			Thread.currentThread().interrupt();
		}
	}

	private void freeBuffers() {
		List<DeviceBuffer.State> left = new ArrayList<>(this.buffers);
		if (!left.isEmpty()) {
			log.warn("{} device buffers were still open at context close; freeing them", left.size());
		}
		for (DeviceBuffer.State buffer : left) {
			buffer.freeAtShutdown();
		}
		this.buffers.clear();
	}

	@Override
	public String toString() {
		return "GpuContext#" + this.id + "[" + this.info.backend() + " " + this.info.name() + ", " + this.state + "]";
	}

	/**
	 * Configures and opens a {@link GpuContext}. Not thread-safe; use once.
	 */
	public static final class Builder {

		private Backend backend;

		private int device;

		private int poolSize = 8;

		private int maxSize = 32;

		private Duration acquireTimeout = Duration.ofSeconds(30);

		private DefaultStreamMode defaultStream = DefaultStreamMode.PER_THREAD;

		private Duration leakDetectionThreshold = Duration.ZERO;

		private Duration drainTimeout = Duration.ofSeconds(30);

		private int cpuThreads = Runtime.getRuntime().availableProcessors();

		private long cpuMemoryBudget = Runtime.getRuntime().maxMemory();

		private long memoryPoolReleaseThreshold = Long.MAX_VALUE;

		private List<String> compileOptions = List.of();

		private Path kernelCacheDir;

		private KernelTiming kernelTiming = KernelTiming.SAMPLED;

		private GpuListener listener = GpuListener.NONE;

		private Duration utilizationSamplePeriod = Duration.ofMillis(100);

		private long stagingCacheBytes = 256L << 20;

		private Duration utilizationWindow = Duration.ofSeconds(10);

		private Builder() {
		}

		/** {@code null} (the default) chooses automatically: CUDA when usable, else CPU. */
		public Builder backend(Backend backend) {
			this.backend = backend;
			return this;
		}

		public Builder device(int ordinal) {
			if (ordinal < 0) {
				throw new IllegalArgumentException("Device ordinal must not be negative, got " + ordinal);
			}
			this.device = ordinal;
			return this;
		}

		/** Streams created up front. */
		public Builder poolSize(int poolSize) {
			this.poolSize = poolSize;
			return this;
		}

		/** Most streams the pool will create. */
		public Builder maxSize(int maxSize) {
			this.maxSize = maxSize;
			return this;
		}

		public Builder acquireTimeout(Duration timeout) {
			this.acquireTimeout = requireNonNegative(timeout, "acquireTimeout");
			return this;
		}

		public Builder defaultStream(DefaultStreamMode mode) {
			this.defaultStream = Objects.requireNonNull(mode, "mode");
			return this;
		}

		/** A lease held longer than this logs its acquisition stack; zero turns it off. */
		public Builder leakDetectionThreshold(Duration threshold) {
			this.leakDetectionThreshold = requireNonNegative(threshold, "leakDetectionThreshold");
			return this;
		}

		public Builder drainTimeout(Duration timeout) {
			this.drainTimeout = requireNonNegative(timeout, "drainTimeout");
			return this;
		}

		/** Worker threads of the CPU backend (default: the number of cores). */
		public Builder cpuThreads(int threads) {
			if (threads < 1) {
				throw new IllegalArgumentException("cpuThreads must be at least 1, got " + threads);
			}
			this.cpuThreads = threads;
			return this;
		}

		/** How much memory the CPU backend may hand out as device memory (default: the max heap size). */
		public Builder cpuMemoryBudget(long bytes) {
			if (bytes < 1) {
				throw new IllegalArgumentException("cpuMemoryBudget must be positive, got " + bytes);
			}
			this.cpuMemoryBudget = bytes;
			return this;
		}

		/** Bytes the CUDA stream-ordered allocator keeps cached between frees (default: all). */
		public Builder memoryPoolReleaseThreshold(long bytes) {
			this.memoryPoolReleaseThreshold = bytes;
			return this;
		}

		public Builder compileOptions(List<String> options) {
			this.compileOptions = List.copyOf(options);
			return this;
		}

		/** Where compiled kernels are cached; {@code null} for no disk cache. */
		public Builder kernelCacheDir(Path dir) {
			this.kernelCacheDir = dir;
			return this;
		}

		public Builder kernelTiming(KernelTiming timing) {
			this.kernelTiming = Objects.requireNonNull(timing, "timing");
			return this;
		}

		public Builder listener(GpuListener listener) {
			this.listener = Objects.requireNonNull(listener, "listener");
			return this;
		}

		/**
		 * How often pooled streams are sampled for the utilisation statistic, and the window it
		 * averages over. A zero period turns sampling off.
		 */
		public Builder utilizationSampling(Duration period, Duration window) {
			this.utilizationSamplePeriod = requireNonNegative(period, "period");
			this.utilizationWindow = requireNonNegative(window, "window");
			return this;
		}

		/**
		 * Most host staging memory (page-locked on CUDA) kept for reuse by copies between them
		 * (default 256 MiB); zero allocates and frees staging memory for every copy.
		 */
		public Builder stagingCache(long bytes) {
			if (bytes < 0) {
				throw new IllegalArgumentException("stagingCache must not be negative, got " + bytes);
			}
			this.stagingCacheBytes = bytes;
			return this;
		}

		private static Duration requireNonNegative(Duration value, String name) {
			Objects.requireNonNull(value, name);
			if (value.isNegative()) {
				throw new IllegalArgumentException(name + " must not be negative, got " + value);
			}
			return value;
		}

		/**
		 * Opens the device and creates {@code poolSize} streams.
		 * @throws BackendUnavailableException when the requested backend cannot run here
		 * @throws IllegalArgumentException when sizes contradict each other
		 */
		public GpuContext open() {
			if (this.poolSize < 0) {
				throw new IllegalArgumentException("poolSize must not be negative, got " + this.poolSize);
			}
			if (this.maxSize < 1) {
				throw new IllegalArgumentException("maxSize must be at least 1, got " + this.maxSize);
			}
			if (this.poolSize > this.maxSize) {
				throw new IllegalArgumentException(
						"poolSize (" + this.poolSize + ") must not exceed maxSize (" + this.maxSize + ")");
			}
			Selection selection = select(this.backend, this.device);
			if (selection.provider() == null || !selection.availability().available()) {
				throw new BackendUnavailableException(selection.backend(), selection.availability().reason(), null);
			}
			BackendConfig config = new BackendConfig(this.device, this.cpuThreads, this.cpuMemoryBudget,
					this.memoryPoolReleaseThreshold, this.compileOptions, this.kernelCacheDir);
			DeviceBackend opened = selection.provider().open(config);
			GpuContext context;
			try {
				context = new GpuContext(this, opened, selection.reason());
				context.pool.fill();
			}
			catch (RuntimeException ex) {
				opened.close();
				throw ex;
			}
			if (selection.warning()) {
				log.warn("GPU backend {}: {}, device {}; {}", selection.backend(), opened.info().name(), this.device,
						selection.reason());
			}
			else {
				log.info("GPU backend {}: {}, device {}; {}", selection.backend(), opened.info().name(), this.device,
						selection.reason());
			}
			return context;
		}

	}

}
