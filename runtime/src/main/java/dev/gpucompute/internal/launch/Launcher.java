package dev.gpucompute.internal.launch;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.Supplier;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.InvalidKernelArgumentException;
import dev.gpucompute.InvalidLaunchConfigException;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelNotFoundException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.memory.Memory;
import dev.gpucompute.internal.pool.Pool;
import dev.gpucompute.internal.stream.Events;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.listener.KernelLoad;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * The implementation of {@link GpuLauncher} for one context: kernel loads, the launch path (argument
 * and configuration checks, buffer ordering, sampled device timing), current-stream scoping and
 * stream-parallel groups. Built with the collaborators it uses. Thread-safe.
 */
public final class Launcher implements GpuLauncher {

	private final ContextState lifecycle;

	private final Memory memory;

	private final Pool pool;

	private final DeviceBackend backend;

	private final DeviceInfo device;

	private final GpuListener listener;

	private final KernelRegistry kernels;

	/** Loads in progress by kernel name, so that a name is loaded once while other names load in parallel. */
	private final ConcurrentHashMap<String, CompletableFuture<KernelHandle>> loading = new ConcurrentHashMap<>();

	private final Streams streams;

	private final Events events;

	private final LaunchTimings timings;

	private final KernelLoads loads;

	/** The context's captures in progress: a launch reads {@link Captures#any()} once. */
	private final Captures captures;

	/**
	 * @param lifecycle the context's: open checks, identity of its streams, buffers and kernels
	 * @param backend loads and launches
	 * @param listener told of launches, failures, timings and loads
	 * @param timing which launches are timed on the device
	 * @param streams the current stream of each thread, and groups' streams
	 * @param events the runtime's own events (fork, join, timing)
	 * @param memory allocates buffers, checks buffer arguments
	 * @param pool leases the streams of stream-parallel groups
	 * @param completions the context's pending completions (a load waits for the work they belong to)
	 * @param kernelLoadWaitThreshold a load longer than this while work runs is reported
	 * @param kernels the context's loaded kernels, which the backend reports failures to
	 */
	public Launcher(ContextState lifecycle, DeviceBackend backend, GpuListener listener, KernelTiming timing,
			Streams streams, Events events, Memory memory, Pool pool, ContextCompletions completions,
			java.time.Duration kernelLoadWaitThreshold, KernelRegistry kernels) {
		this.kernels = kernels;
		this.lifecycle = lifecycle;
		this.backend = backend;
		this.device = backend.info();
		this.listener = listener;
		this.timings = new LaunchTimings(timing, events, listener);
		this.streams = streams;
		this.events = events;
		this.memory = memory;
		this.pool = pool;
		this.captures = lifecycle.captures();
		this.loads = new KernelLoads(lifecycle, backend, listener, streams, pool, completions,
				kernelLoadWaitThreshold);
	}


	@Override
	public GpuContext context() {
		return this.lifecycle.owner();
	}

	// ---- kernels -----------------------------------------------------------------------------

	@Override
	public Kernel load(KernelSource source) {
		return load(source, KernelLoad.Trigger.LOAD);
	}

	/** Loads {@code source} unless a kernel of its name is loaded; {@code trigger} says why, for the report. */
	public Kernel load(KernelSource source, KernelLoad.Trigger trigger) {
		Objects.requireNonNull(source, "source");
		this.lifecycle.ensureOpen();
		KernelHandle existing = this.kernels.get(source.name());
		if (existing == null) {
			if (this.captures.any()) {
				this.captures.checkNotCapturing(GraphCaptureException.Kind.KERNEL_LOAD, "Loading kernel '" + source.name()
						+ "'", "load kernels before the capture (launcher.load, or GpuContextBuilder.kernels); on CUDA a "
								+ "load waits for the device, which a capture cannot");
			}
			existing = loadOnce(source, trigger);
		}
		if (existing.source() != source) {
			String difference = existing.source().differenceFrom(source);
			if (difference != null) {
				throw new GpuException("A different kernel named '" + source.name() + "' is already loaded (" + difference
						+ "); kernel names must be unique within a context. Keep each KernelSource in a constant, or give "
						+ "the other kernel another name");
			}
		}
		return existing;
	}

	/**
	 * Loads a kernel not loaded yet. Compiling can take seconds, so it runs outside any lock shared
	 * between kernels: only callers of the same name wait for it, and they get its outcome.
	 */
	private KernelHandle loadOnce(KernelSource source, KernelLoad.Trigger trigger) {
		CompletableFuture<KernelHandle> mine = new CompletableFuture<>();
		CompletableFuture<KernelHandle> theirs = this.loading.putIfAbsent(source.name(), mine);
		if (theirs != null) {
			try {
				return theirs.join();
			}
			catch (java.util.concurrent.CompletionException ex) {
				if (ex.getCause() instanceof RuntimeException runtime) {
					throw runtime;
				}
				if (ex.getCause() instanceof Error error) {
					throw error;
				}
				throw ex;
			}
		}
		try {
			KernelHandle loaded = this.kernels.get(source.name());
			if (loaded == null) {
				loaded = new KernelHandle(this.lifecycle, source, this.loads.load(source, trigger));
				this.kernels.put(source.name(), loaded);
			}
			mine.complete(loaded);
			return loaded;
		}
		catch (RuntimeException | Error ex) {
			mine.completeExceptionally(ex);
			throw ex;
		}
		finally {
			this.loading.remove(source.name(), mine);
		}
	}

	@Override
	public Kernel kernel(String name) {
		Objects.requireNonNull(name, "name");
		Kernel kernel = this.kernels.get(name);
		if (kernel == null) {
			throw new KernelNotFoundException(name, new java.util.TreeSet<>(this.kernels.names()));
		}
		return kernel;
	}

	@Override
	public Collection<Kernel> kernels() {
		return List.copyOf(this.kernels.all());
	}

	// ---- launching -------------------------------------------------------------------------

	@Override
	public void launch(Kernel kernel, LaunchConfig config, Object... args) {
		launchOn(currentStream(), kernel, config, args);
	}

	/**
	 * {@inheritDoc}
	 * <p>The only launch that may load a kernel: the first one of a source not loaded yet, reported as
	 * {@link KernelLoad.Trigger#LAUNCH} and logged (see {@link KernelLoads}).
	 */
	@Override
	public void launch(KernelSource source, LaunchConfig config, Object... args) {
		Objects.requireNonNull(source, "source");
		Kernel kernel = this.kernels.get(source.name());
		if (kernel == null || kernel.source() != source) {
			kernel = load(source, KernelLoad.Trigger.LAUNCH);
		}
		launchOn(currentStream(), kernel, config, args);
	}

	@Override
	public void launch(GpuStream stream, Kernel kernel, LaunchConfig config, Object... args) {
		Objects.requireNonNull(stream, "stream");
		launchOn(stream, kernel, config, args);
	}

	private void launchOn(GpuStream stream, Kernel kernel, LaunchConfig config, Object[] args) {
		Objects.requireNonNull(kernel, "kernel");
		StreamHandle handle = StreamHandle.of(stream);
		NativeStream target = handle.use();
		this.lifecycle.ensureSame(handle.lifecycle(), "Stream ", stream.name());
		KernelHandle loaded = KernelHandle.of(kernel);
		this.lifecycle.ensureSame(loaded.lifecycle(), "Kernel ", kernel.name());
		KernelSource source = loaded.source();
		Args view = checkArguments(source, args);
		checkConfig(source.name(), config);
		if (this.captures.any()) {
			Capture capture = this.captures.forWork(target, "Launch of kernel '" + source.name() + "'");
			if (capture != null) {
				launchCaptured(capture, loaded, config, view, target);
				return;
			}
		}
		if (config.isEmpty()) {
			// Nothing runs, so nothing to order or time; still refused, and counted so, where the backend
			// has no body for the kernel, as a launch that reaches it is.
			try {
				this.backend.checkLaunchable(loaded.handle());
			}
			catch (RuntimeException ex) {
				counted(loaded, false);
				throw ex;
			}
			counted(loaded, true);
			return;
		}
		if (view.buffers) {
			// Before the launch: a first use on this stream must wait for the buffer's allocation.
			for (int i = 0; i < args.length; i++) {
				if (source.param(i) == ParamType.BUFFER) {
					Memory.usedOn((DeviceBuffer) args[i], stream);
				}
			}
		}
		// After the waits for the buffers' other streams, so that the device time is the kernel's alone.
		NativeEvent start = this.timings.start(loaded, target);
		try {
			this.backend.launch(loaded.handle(), config, view, target);
		}
		catch (RuntimeException ex) {
			this.timings.abandon(start);
			counted(loaded, false);
			throw ex;
		}
		counted(loaded, true);
		if (start != null) {
			this.timings.end(loaded, target, start);
		}
	}

	/**
	 * A launch the capture records: checked as any launch, then recorded with its arguments. Its
	 * buffers are ordered on the stream of each replay instead of here (a wait inside the capture for
	 * an allocation outside it is not allowed), and it is neither timed nor counted as a launch: the
	 * graph's replays are.
	 */
	private void launchCaptured(Capture capture, KernelHandle loaded, LaunchConfig config, Args view,
			NativeStream target) {
		this.backend.checkLaunchable(loaded.handle());
		if (config.isEmpty()) {
			return;
		}
		if (view.buffers) {
			for (int i = 0; i < view.count(); i++) {
				if (view.type(i) == ParamType.BUFFER) {
					capture.uses(Memory.graphUse(view.buffer(i)));
				}
			}
		}
		this.backend.launch(loaded.handle(), config, view, target);
	}

	/** Counts a launch that reached the backend, or was refused there, and tells the listener. */
	private void counted(KernelHandle kernel, boolean launched) {
		(launched ? kernel.launches : kernel.errors).increment();
		this.listener.kernelLaunched(kernel.name(), launched);
	}

	/**
	 * Reports the device time of timed launches whose end event has completed and returns their
	 * events (see {@link LaunchTimings#drain(boolean)}).
	 */
	public void drainTimings(boolean all) {
		this.timings.drain(all);
	}


	private Args checkArguments(KernelSource source, Object[] args) {
		if (args == null) {
			throw new InvalidKernelArgumentException(source.name(), -1, "Kernel '" + source.name() + "' takes "
					+ source.paramCount() + " arguments " + source.params() + ", got a null argument array");
		}
		if (args.length != source.paramCount()) {
			throw new InvalidKernelArgumentException(source.name(), -1, "Kernel '" + source.name() + "' takes "
					+ source.paramCount() + " arguments " + source.params() + ", got " + args.length);
		}
		boolean buffers = false;
		for (int i = 0; i < args.length; i++) {
			Object arg = args[i];
			ParamType type = source.param(i);
			if (arg == null) {
				throw new InvalidKernelArgumentException(source.name(), i,
						"Argument " + i + " of kernel '" + source.name() + "' (" + type + ") is null");
			}
			if (!type.javaType().isInstance(arg)) {
				throw new InvalidKernelArgumentException(source.name(), i, "Argument " + i + " of kernel '" + source.name() + "' must be "
						+ type + " (" + type.javaType().getSimpleName() + "), got " + arg.getClass().getSimpleName()
						+ " " + arg);
			}
			if (type == ParamType.BUFFER) {
				buffers = true;
				this.memory.checkForLaunch((DeviceBuffer) arg);
			}
		}
		return new Args(source, args, buffers);
	}

	private void checkConfig(String kernel, LaunchConfig config) {
		if (config == null) {
			throw new InvalidLaunchConfigException("Kernel '" + kernel + "' needs a launch configuration, got null");
		}
		Dim3 block = config.block();
		Dim3 grid = config.grid();
		if (block.volume() > this.device.maxThreadsPerBlock()) {
			throw new InvalidLaunchConfigException("Kernel '" + kernel + "': a block of " + block + " = "
					+ block.volume() + " threads exceeds the device's limit of " + this.device.maxThreadsPerBlock()
					+ " threads per block");
		}
		Dim3 maxBlock = this.device.maxBlockDim();
		if (block.x() > maxBlock.x() || block.y() > maxBlock.y() || block.z() > maxBlock.z()) {
			throw new InvalidLaunchConfigException(
					"Kernel '" + kernel + "': block " + block + " exceeds the device's block limits " + maxBlock);
		}
		Dim3 maxGrid = this.device.maxGridDim();
		if (grid.x() > maxGrid.x() || grid.y() > maxGrid.y() || grid.z() > maxGrid.z()) {
			throw new InvalidLaunchConfigException(
					"Kernel '" + kernel + "': grid " + grid + " exceeds the device's grid limits " + maxGrid);
		}
		if (config.sharedMemoryBytes() > this.device.maxSharedMemoryPerBlock()) {
			throw new InvalidLaunchConfigException("Kernel '" + kernel + "': " + config.sharedMemoryBytes()
					+ " bytes of dynamic shared memory exceed the device's limit of "
					+ this.device.maxSharedMemoryPerBlock() + " bytes per block");
		}
	}

	/** The checked arguments, as the backend reads them. */
	private static final class Args implements LaunchArgs {

		private final KernelSource source;

		private final Object[] args;

		final boolean buffers;

		Args(KernelSource source, Object[] args, boolean buffers) {
			this.source = source;
			this.args = args;
			this.buffers = buffers;
		}

		@Override
		public int count() {
			return this.args.length;
		}

		@Override
		public ParamType type(int index) {
			return this.source.param(index);
		}

		@Override
		public int i32(int index) {
			return (Integer) this.args[index];
		}

		@Override
		public long i64(int index) {
			return (Long) this.args[index];
		}

		@Override
		public float f32(int index) {
			return (Float) this.args[index];
		}

		@Override
		public double f64(int index) {
			return (Double) this.args[index];
		}

		DeviceBuffer buffer(int index) {
			return (DeviceBuffer) this.args[index];
		}

		@Override
		public NativeMemory memory(int index) {
			// Checked by checkArguments moments ago; not checked again on the launch path.
			return Memory.nativeMemory((DeviceBuffer) this.args[index]);
		}

	}

	// ---- current stream ----------------------------------------------------------------------

	@Override
	public GpuStream currentStream() {
		return this.streams.current();
	}

	@Override
	public void withStream(GpuStream stream, Runnable action) {
		Objects.requireNonNull(action, "action");
		try (StreamScope scope = useStream(stream)) {
			action.run();
		}
	}

	@Override
	public <T> T callWithStream(GpuStream stream, Supplier<T> action) {
		return this.streams.callWithStream(stream, action);
	}

	@Override
	public StreamScope useStream(GpuStream stream) {
		return this.streams.useStream(stream);
	}

	// ---- stream-parallel groups --------------------------------------------------------------

	@Override
	public void parallel(Runnable... branches) {
		Objects.requireNonNull(branches, "branches");
		List<Consumer<GpuStream>> wrapped = new ArrayList<>(branches.length);
		for (Runnable branch : branches) {
			Objects.requireNonNull(branch, "branch");
			wrapped.add((stream) -> branch.run());
		}
		parallel(wrapped);
	}

	@Override
	public void parallel(List<? extends Consumer<GpuStream>> branches) {
		Objects.requireNonNull(branches, "branches");
		for (Consumer<GpuStream> branch : branches) {
			Objects.requireNonNull(branch, "branch");
		}
		if (this.streams.inGroup()) {
			throw new GpuException("Stream-parallel groups cannot be nested: a branch may not start another group "
					+ "(it could wait forever for streams its own group holds); run the inner work on the branch's stream");
		}
		if (branches.isEmpty()) {
			return;
		}
		Pool pool = this.pool;
		StreamHandle parent = this.streams.current();
		// One pooled stream per branch, at the parent's priority: a group the pool can never lease fails
		// here, before the fork, as PoolTooSmallException (a configuration problem, not a busy pool).
		pool.checkGroupSize(parent.priority(), branches.size());
		NativeStream parentStream = parent.use();
		Events events = this.events;
		List<StreamLease> leases = new ArrayList<>(branches.size());
		Throwable failure = null;
		this.streams.groupHolds(0);
		try {
			NativeEvent fork = events.acquireNative(false);
			try {
				fork.record(parentStream);
				// All at once, so concurrent groups cannot each hold part of the pool and wait for the rest.
				// At the parent's priority: work forked from a high-priority stream stays ahead of normal work.
				leases.addAll(pool.acquireAll(parent.priority(), branches.size(), pool.acquireTimeout()));
				this.streams.groupHolds(leases.size());
				for (int i = 0; i < branches.size(); i++) {
					Consumer<GpuStream> branch = branches.get(i);
					GpuStream stream = leases.get(i).stream();
					StreamHandle.of(stream).raw().waitEvent(fork);
					withStream(stream, () -> branch.accept(stream));
				}
			}
			finally {
				events.releaseNative(fork);
			}
		}
		catch (Throwable ex) {
			failure = ex;
		}
		finally {
			this.streams.groupEnded();
			for (StreamLease lease : leases) {
				try {
					events.order(parentStream, StreamHandle.of(lease.stream()).raw());
				}
				catch (RuntimeException ex) {
					if (failure == null) {
						failure = ex;
					}
					else {
						failure.addSuppressed(ex);
					}
				}
				finally {
					lease.close();
				}
			}
		}
		if (failure instanceof RuntimeException runtime) {
			throw runtime;
		}
		if (failure instanceof Error error) {
			throw error;
		}
		if (failure != null) {
			throw new GpuException("A stream-parallel branch failed", failure);
		}
	}

	// ---- completion and memory -------------------------------------------------------------------

	@Override
	public CompletableFuture<Void> completion() {
		return currentStream().completion();
	}

	@Override
	public HostBuffer allocateHost(long bytes) {
		this.lifecycle.ensureOpen();
		Captures captures = this.lifecycle.captures();
		if (captures.any()) {
			captures.checkNotCapturing(GraphCaptureException.Kind.ALLOCATION, "Allocating a host buffer of " + bytes
					+ " bytes", "allocate host buffers before the capture begins; a graph copies from and into the same "
							+ "host buffers at every replay");
		}
		return this.memory.allocateHost(bytes);
	}

	@Override
	public DeviceBuffer allocate(long count, ElementType type) {
		Objects.requireNonNull(type, "type");
		this.lifecycle.ensureOpen();
		return this.memory.allocate(type.byteSize(count), currentStream());
	}

}
