package dev.gpucompute.internal.context;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.Backend;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamPool;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.internal.batch.Batcher;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.ContextThreads;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.graph.Graphs;
import dev.gpucompute.internal.launch.Launcher;
import dev.gpucompute.internal.memory.Memory;
import dev.gpucompute.internal.pool.Pool;
import dev.gpucompute.internal.stream.Events;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.settings.Limits;
import dev.gpucompute.spi.DeviceBackend;

/** The implementation of {@link GpuContext}. */
public final class ContextImpl implements GpuContext, GpuGraphs.Host {

	private static final Logger log = LoggerFactory.getLogger(GpuContext.class);

	private final DeviceBackend backend;

	private final DeviceInfo info;

	private final String backendReason;

	private final DefaultStreamMode defaultStreamMode;

	private final Duration drainTimeout;

	private final GpuListener listener;

	private final KernelTiming kernelTiming;

	private final ScheduledThreadPoolExecutor housekeeping;

	private final ContextCompletions completions;

	private final Events events;

	private final Streams streams;

	private final Pool pool;

	private final Launcher launcher;

	private final Graphs graphs;

	/** Set when close begins, before the batchers close (the context stays open for them); guarded by this. */
	private boolean closeStarted;

	/** Open batchers, closed before the pool stops; guarded by this for registration. */
	private final Set<GpuBatcher<?, ?>> batchers = new java.util.concurrent.CopyOnWriteArraySet<>();

	private final Memory memory;

	/** Identity and lifecycle: what every handle of this context checks. */
	private final ContextState lifecycle;

	private final int id;

	/**
	 * The facade over the rooms {@code assembly} builds: it makes the lifecycle, with itself as the
	 * owner that every handle's {@code context()} answers, and the assembly builds the rooms around it.
	 */
	ContextImpl(ContextAssembly assembly, String backendReason) {
		GpuContextBuilder.Settings settings = assembly.settings();
		this.id = assembly.id();
		this.backend = assembly.backend();
		this.info = this.backend.info();
		this.backendReason = backendReason;
		this.defaultStreamMode = settings.streams().defaultStream();
		this.drainTimeout = settings.shutdown().drainTimeout();
		this.listener = settings.listener();
		this.kernelTiming = settings.metrics().kernelTiming();
		this.lifecycle = new ContextState(this.id, this.info, this);
		ContextAssembly.Rooms rooms = assembly.build(this.lifecycle);
		this.housekeeping = rooms.housekeeping();
		this.completions = rooms.completions();
		this.events = rooms.events();
		this.streams = rooms.streams();
		this.memory = rooms.memory();
		this.pool = rooms.pool();
		this.launcher = rooms.launcher();
		this.graphs = rooms.graphs();
	}

	/** Creates the pool's streams up front and loads the kernels named at open, in their order. */
	void start(List<KernelSource> kernels) {
		this.pool.fill();
		ContextAssembly.loadAtOpen(this.launcher, kernels);
	}

	// ---- accessors ----------------------------------------------------------------------

	@Override
	public Backend backend() {
		return this.info.backend();
	}

	@Override
	public String backendReason() {
		return this.backendReason;
	}

	@Override
	public DeviceInfo device() {
		return this.info;
	}

	@Override
	public StreamPool streams() {
		return this.pool;
	}

	@Override
	public EventRegistry events() {
		return this.events;
	}

	@Override
	public GpuLauncher launcher() {
		return this.launcher;
	}

	@Override
	public DefaultStreamMode defaultStreamMode() {
		return this.defaultStreamMode;
	}

	@Override
	public KernelTiming kernelTiming() {
		return this.kernelTiming;
	}

	@Override
	public Duration drainTimeout() {
		return this.drainTimeout;
	}

	/**
	 * The open {@link GpuBatcher}s of this context, in the order they were built; a snapshot. The
	 * context closes them first when it drains or closes, while its pool still leases streams.
	 */
	public List<GpuBatcher<?, ?>> batchers() {
		return List.copyOf(this.batchers);
	}

	/** Builds, registers and starts a batcher on this context (what {@link GpuBatcher.Builder#build()} does). */
	public <I, O> GpuBatcher<I, O> openBatcher(BatchHandler<I, O> handler, String name,
			java.util.function.Function<? super I, ?> keyOf, GpuBatcher.Settings settings) {
		Batcher<I, O> batcher = new Batcher<>(this, this.lifecycle, handler, name, keyOf, settings, this.listener,
				this.completions,
				this.housekeeping, this.drainTimeout, this::unregister);
		register(batcher);
		batcher.start();
		this.listener.batcherOpened(batcher.name());
		return batcher;
	}

	/** Adds a batcher built on this context; refused when one of that name is open or the context closes. */
	synchronized void register(GpuBatcher<?, ?> batcher) {
		this.lifecycle.ensureOpen();
		if (this.closeStarted) {
			throw new ContextClosedException("GPU context #" + this.id + " is closing: no batcher can be added");
		}
		for (GpuBatcher<?, ?> open : this.batchers) {
			if (open.name().equals(batcher.name())) {
				throw new IllegalStateException("GPU context #" + this.id + " has an open batcher named '"
						+ batcher.name() + "' already; batcher names must be unique per context");
			}
		}
		this.batchers.add(batcher);
	}

	void unregister(GpuBatcher<?, ?> batcher) {
		this.batchers.remove(batcher);
	}

	/**
	 * The default stream of the calling thread: its own in {@link DefaultStreamMode#PER_THREAD} mode
	 * (usable only from that thread), the shared legacy stream otherwise.
	 */
	@Override
	public GpuStream defaultStream() {
		return this.streams.defaultStream();
	}

	@Override
	public GpuContext.MemoryInfo memory() {
		this.lifecycle.ensureOpen();
		return this.backend.memoryInfo();
	}

	/**
	 * A snapshot of the host memory held for copies: host buffers, staging in use against its budget
	 * (with its peak, the copies waiting for it and those that gave up), cached.
	 */
	@Override
	public GpuContext.HostMemoryInfo hostMemory() {
		this.lifecycle.ensureOpen();
		return this.memory.hostInfo();
	}

	@Override
	public boolean isHealthy() {
		return healthProblem() == null;
	}

	@Override
	public @Nullable String healthProblem() {
		if (!this.lifecycle.isOpen()) {
			return "GPU context is " + this.lifecycle.phase();
		}
		return this.backend.healthProblem();
	}

	@Override
	public boolean isClosed() {
		return !this.lifecycle.isOpen();
	}

	@Override
	public void synchronizeDevice() {
		this.lifecycle.ensureOpen();
		Captures captures = this.lifecycle.captures();
		if (captures.any()) {
			captures.checkHostWait(null, "GpuContext.synchronizeDevice()");
		}
		this.backend.synchronizeDevice();
	}

	/** The graphs of this context (what {@link GpuGraphs#of(GpuContext)} answers). */
	@Override
	public GpuGraphs graphs() {
		return this.graphs;
	}

	// ---- internals shared with the handles ---------------------------------------------

	/** This context belongs to {@code devices}: their handles may be used with it (peer waits and copies). */
	void joinGroup(GpuDevices devices) {
		this.lifecycle.joinGroup(devices);
	}

	/**
	 * How busy this device is right now, for placing work: streams leased, threads waiting for a lease
	 * and completions (futures of copies and stream work) not done yet. Cheap; a snapshot.
	 */
	@Override
	public DeviceLoad load() {
		StreamPool.PoolStats stats = this.pool.stats();
		return new DeviceLoad(stats.active(), stats.pending(), this.completions.pending());
	}

	// ---- shutdown --------------------------------------------------------------------------

	/**
	 * Closes the context: stops accepting work, waits up to the drain timeout for work in flight,
	 * then destroys events, pooled streams and buffers and releases the device. Work still pending
	 * when the drain timeout passes is abandoned: its futures complete exceptionally with a
	 * {@link ContextClosedException} that says so, and threads blocked in a synchronisation return
	 * with it. Idempotent; no thread, memory or native handle of the context outlives it (except
	 * what a kernel that cannot be stopped still uses: a CUDA kernel, or a CPU kernel that ignores
	 * interrupts).
	 */
	@Override
	public void close() {
		synchronized (this) {
			if (!this.lifecycle.isOpen() || this.closeStarted) {
				return;
			}
			this.closeStarted = true;
		}
		LeakRegistry.closing(this);
		long started = System.nanoTime();
		// Batchers first, while the context is open and its pool leases: their queued items run within
		// the drain timeout. No batcher can be added meanwhile (closeStarted).
		try {
			Batcher.closeAll(List.copyOf(this.batchers), this.drainTimeout);
		}
		catch (RuntimeException ex) {
			log.warn("Closing the batchers of GPU context #{} failed", this.id, ex);
		}
		this.lifecycle.closing();
		// No copy may start now: those waiting for staging give up rather than hold up the drain.
		this.memory.stopStaging(this.lifecycle.describe() + " closed while a copy waited for staging memory");
		boolean drained = true;
		int abandoned = 0;
		try {
			this.pool.stopAccepting();
			// Copies already begun enqueue the rest of their work and register their futures first, so
			// that the wait for the device covers them.
			long deadline = started + Math.min(this.drainTimeout.toNanos(), Long.MAX_VALUE / 2);
			drained = this.lifecycle.awaitWork(deadline)
					&& this.backend.awaitIdle(Math.max(0, deadline - System.nanoTime()));
			String reason = this.lifecycle.describe() + " closed before this work finished: it was abandoned at close, "
					+ (drained ? "submitted while the context was closing"
							: "still pending when the drain timeout of " + this.drainTimeout + " passed");
			boolean quiet = drained || this.backend.abandon(new ContextClosedException(reason));
			this.housekeeping.shutdownNow();
			ContextThreads.awaitQuietly(this.housekeeping);
			this.launcher.drainTimings(true);
			abandoned = this.completions.abandonAll(reason);
			this.completions.shutdown();
			this.memory.closeHost(quiet);
			this.graphs.releaseAtClose();
			this.events.destroyAll();
			this.pool.destroyAll();
			this.memory.releaseAtClose();
		}
		finally {
			this.lifecycle.closed();
			try {
				this.backend.close();
			}
			catch (RuntimeException ex) {
				log.warn("Releasing {} device {} failed", this.info.backend(), this.info.ordinal(), ex);
			}
			long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
			if (drained) {
				log.info("Closed GPU context #{} ({} device {}) in {} ms; its work had finished", this.id,
						this.info.backend(), this.info.ordinal(), millis);
			}
			else {
				log.warn("Closed GPU context #{} ({} device {}) in {} ms; work was still running after the drain timeout "
						+ "of {}: {} waiting completions abandoned", this.id, this.info.backend(), this.info.ordinal(),
						millis, this.drainTimeout, abandoned);
			}
		}
	}

	/**
	 * Closes this context's {@link GpuBatcher}s (their queued items are dispatched within
	 * {@code timeout}, what is left then is abandoned), stops handing out stream leases and waits for
	 * the rest of {@code timeout} for the work already enqueued on the device to finish, releasing
	 * nothing: the first half of {@link #close()}, for containers
	 * that stop work in one phase and release resources in a later one (Spring stops its lifecycle
	 * beans before it destroys beans). Leases already held stay usable until they are closed, and
	 * launches on them or on default streams still run; acquiring a lease afterwards raises
	 * {@link ContextClosedException}. Thread-safe and idempotent; {@link #close()} afterwards still
	 * waits for whatever was enqueued after this call. Starts no thread, and returns by the timeout
	 * even when a kernel never ends.
	 * @param timeout longest wait for the device to become idle
	 * @return whether the device became idle within the timeout (also {@code true} when closed)
	 * @throws IllegalArgumentException when the timeout is negative or longer than about 292 years
	 */
	@Override
	public boolean drain(Duration timeout) {
		long nanos = Limits.nanos(timeout, "timeout");
		if (this.lifecycle.isClosed()) {
			return true;
		}
		long started = System.nanoTime();
		Batcher.closeAll(List.copyOf(this.batchers), timeout);
		this.pool.stopAccepting();
		return this.backend.awaitIdle(Math.max(0, nanos - (System.nanoTime() - started)));
	}

	/**
	 * The work in flight now, in words, or {@code null} when none (for {@link dev.gpucompute.LeakTracker#pendingWork()}):
	 * pooled streams not idle, the calling thread's default stream (or the shared legacy one) not
	 * idle, futures of stream work not complete. A query: nothing waits.
	 */
	@Nullable String workInFlight() {
		List<String> parts = new java.util.ArrayList<>();
		try {
			if (this.pool.anyBusy()) {
				parts.add("a pooled stream has work in flight");
			}
			int completions = this.completions.pending();
			if (completions > 0) {
				parts.add(completions + ((completions == 1) ? " future of stream work is" : " futures of stream work are")
						+ " not complete");
			}
			GpuStream own = defaultStream();
			if (!own.isIdle()) {
				parts.add("the default stream " + own.name() + " has work in flight");
			}
		}
		catch (RuntimeException ex) {
			return null; // closed meanwhile, or the device failed: nothing left that runs
		}
		return parts.isEmpty() ? null : this + ": " + String.join(", ", parts);
	}

	@Override
	public String toString() {
		return "GpuContext#" + this.id + "[" + this.info.backend() + " " + this.info.name() + ", "
				+ this.lifecycle.phase().toUpperCase(java.util.Locale.ROOT) + "]";
	}

}
