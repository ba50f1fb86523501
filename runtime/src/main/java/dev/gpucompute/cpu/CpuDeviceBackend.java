package dev.gpucompute.cpu;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.Backend;
import dev.gpucompute.CpuKernel;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.UnsupportedBackendOperationException;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.BackendListener;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.HostThreads;
import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * The CPU device: one worker pool shared by all streams. Worker tasks carry their stream's
 * priority, so high-priority streams go first when the workers are contended.
 */
final class CpuDeviceBackend implements DeviceBackend {

	private static final Logger log = LoggerFactory.getLogger(CpuDeviceBackend.class);

	private static final AtomicInteger IDS = new AtomicInteger();

	/** How long close waits for running worker tasks to notice the interrupt before it gives up on them. */
	private static final long WORKER_GRACE_MILLIS = 2_000;

	/** Limits mirror a current NVIDIA GPU, so a launch valid here is valid there. */
	private static final int MAX_THREADS_PER_BLOCK = 1024;

	private static final Dim3 MAX_BLOCK = new Dim3(1024, 1024, 64);

	private static final Dim3 MAX_GRID = new Dim3(Integer.MAX_VALUE, 65535, 65535);

	private static final int MAX_SHARED = 48 * 1024;

	private final DeviceInfo info;

	private final ThreadPoolExecutor workers;

	private final int threads;

	private final long budget;

	private final AtomicLong used = new AtomicLong();

	private final AtomicLong liveBuffers = new AtomicLong();

	private final AtomicLong taskSequence = new AtomicLong();

	private final AtomicLong droppedAfterClose = new AtomicLong();

	private final BackendListener listener;

	/** The legacy default stream and the created streams, each until it is destroyed and its work done. */
	private final Set<CpuStream> streams = ConcurrentHashMap.newKeySet();

	/**
	 * The per-thread default streams with work in flight, guarded by itself: a thread's default stream
	 * joins when work is enqueued on it while it is idle and leaves when that work and its callbacks
	 * are done (see {@link CpuStream#CpuStream(CpuDeviceBackend, String, int, boolean, boolean)}).
	 * Device synchronisation, the drain and close find the work of every thread here, threads that
	 * ended included, while an idle default stream belongs to its thread alone and goes with it: a
	 * service that starts a thread (a virtual thread) per request does not add a stream per request.
	 * An identity set, so that joining allocates nothing.
	 */
	private final Set<CpuStream> busyDefaultStreams = Collections.newSetFromMap(new IdentityHashMap<>());

	/** Set under {@link #busyDefaultStreams} when close or abandon began: a default stream joining later gets it. */
	private @Nullable GpuException closing;

	/** Allocations not yet freed, so that close frees what buffers left open still hold. */
	private final Set<CpuMemory> allocations = ConcurrentHashMap.newKeySet();

	/** Whether work may still run after {@link #abandon}: then memory is left to the garbage collector. */
	private volatile boolean workStillRunning;

	private final CpuStream legacy;

	private final ThreadLocal<CpuStream> perThread;

	CpuDeviceBackend(BackendConfig config) {
		this.threads = config.cpuThreads();
		this.budget = config.cpuMemoryBudgetBytes();
		this.listener = config.listener();
		AtomicInteger workerNumber = new AtomicInteger();
		String prefix = "gpu-cpu" + IDS.incrementAndGet() + "-worker-";
		this.workers = new ThreadPoolExecutor(this.threads, this.threads, 0, TimeUnit.MILLISECONDS,
				new PriorityBlockingQueue<>(), (runnable) -> {
					Thread thread = new Thread(runnable, prefix + workerNumber.incrementAndGet());
					thread.setDaemon(true);
					return thread;
				});
		this.workers.prestartAllCoreThreads();
		this.info = new DeviceInfo(Backend.CPU, config.ordinal(), "CPU (" + this.threads + " worker threads)",
				"CPU-" + config.ordinal(), "", "",
				this.threads, this.budget, "Java " + Runtime.version().feature(), MAX_THREADS_PER_BLOCK, MAX_BLOCK,
				MAX_GRID, MAX_SHARED, 1);
		this.legacy = new CpuStream(this, "default-legacy", 0, false, false);
		this.streams.add(this.legacy);
		this.perThread = ThreadLocal.withInitial(() -> new CpuStream(this,
				"default-per-thread[" + HostThreads.name(Thread.currentThread()) + "]", 0, false, true));
	}

	@Override
	public DeviceInfo info() {
		return this.info;
	}

	/**
	 * Hands a task to the workers.
	 * @throws RejectedExecutionException after close; the stream then fails the operation, and
	 * dropped the rest of its queue when it was abandoned
	 */
	void execute(int priority, Runnable task) {
		try {
			this.workers.execute(new Task(priority, this.taskSequence.getAndIncrement(), task));
		}
		catch (RejectedExecutionException ex) {
			this.droppedAfterClose.incrementAndGet();
			throw ex;
		}
	}

	/** Worker threads: a grid is spread over at most this many tasks. */
	int threads() {
		return this.threads;
	}

	/** Tasks refused because they were handed over after close. */
	long droppedAfterClose() {
		return this.droppedAfterClose.get();
	}

	/** A kernel failed while it ran: counted by the context, once. */
	void kernelFailed(String kernel, GpuException failure) {
		try {
			this.listener.kernelFailed(kernel, failure);
		}
		catch (RuntimeException ex) {
			log.warn("The failure listener threw", ex);
		}
	}

	void forget(CpuStream stream) {
		this.streams.remove(stream);
	}

	/**
	 * A per-thread default stream got work while idle: it is kept until that work is done. Called
	 * with the stream's lock held.
	 * @return {@code null}, or the reason to abandon the work when close or abandon began
	 */
	@Nullable GpuException busy(CpuStream stream) {
		synchronized (this.busyDefaultStreams) {
			if (this.closing != null) {
				return this.closing;
			}
			this.busyDefaultStreams.add(stream);
			return null;
		}
	}

	/** A per-thread default stream's work and callbacks are done. Called with the stream's lock held. */
	void idle(CpuStream stream) {
		synchronized (this.busyDefaultStreams) {
			this.busyDefaultStreams.remove(stream);
		}
	}

	/** Every stream with work that device synchronisation, the drain and close must cover, now. */
	private List<CpuStream> streamsToCover() {
		List<CpuStream> all = new ArrayList<>(this.streams);
		synchronized (this.busyDefaultStreams) {
			all.addAll(this.busyDefaultStreams);
		}
		return all;
	}

	/**
	 * Close or abandon began: default streams that get work from now on abandon it with
	 * {@code reason} (the first one given). Returns the streams to abandon now.
	 */
	private List<CpuStream> stopAccepting(GpuException reason) {
		List<CpuStream> all = new ArrayList<>(this.streams);
		synchronized (this.busyDefaultStreams) {
			if (this.closing == null) {
				this.closing = reason;
			}
			all.addAll(this.busyDefaultStreams);
		}
		return all;
	}

	@Override
	public NativeStream createStream(StreamPriority priority, String name) {
		CpuStream stream = new CpuStream(this, name, (priority == StreamPriority.HIGH) ? 1 : 0, true, false);
		this.streams.add(stream);
		return stream;
	}

	@Override
	public NativeStream defaultStream(DefaultStreamMode mode) {
		return (mode == DefaultStreamMode.LEGACY) ? this.legacy : this.perThread.get();
	}

	/**
	 * {@inheritDoc}
	 * <p>Operations enqueued on a capturing stream are recorded by the {@link CpuCapture} instead of
	 * queued; nothing of them runs until the graph is replayed.
	 */
	@Override
	public dev.gpucompute.spi.NativeCapture beginCapture(NativeStream stream) {
		return CpuCapture.begin((CpuStream) stream);
	}

	@Override
	public NativeEvent createEvent(boolean timing) {
		return new CpuEvent(timing);
	}

	@Override
	public NativeKernel loadKernel(KernelSource source) {
		long started = System.nanoTime();
		java.util.Objects.requireNonNull(source, "source");
		return new CpuKernelHandle(source, System.nanoTime() - started);
	}

	@Override
	public void launch(NativeKernel kernel, LaunchConfig config, LaunchArgs args, NativeStream stream) {
		checkLaunchable(kernel);
		KernelSource source = ((CpuKernelHandle) kernel).source();
		// checkLaunchable refused a kernel without one.
		CpuKernel implementation = Objects.requireNonNull(source.cpu());
		CpuStream cpuStream = (CpuStream) stream;
		CpuArgs captured = new CpuArgs(args);
		cpuStream.enqueue(new CpuKernelRun(source.name(), implementation, config, captured));
	}

	@Override
	public void checkLaunchable(NativeKernel kernel) {
		KernelSource source = ((CpuKernelHandle) kernel).source();
		if (source.cpu() == null) {
			throw new UnsupportedBackendOperationException("Kernel '" + source.name()
					+ "' has no CPU implementation, so it cannot run on the CPU backend; add one with "
					+ "KernelSource.cpu(...) or run on CUDA");
		}
	}

	@Override
	public NativeMemory allocate(long bytes, NativeStream stream) {
		if (bytes < 0) {
			throw new IllegalArgumentException("Allocation size must not be negative, got " + bytes);
		}
		long before;
		do {
			before = this.used.get();
			if (bytes > this.budget - before) {
				throw new GpuOutOfMemoryException(bytes, "the CPU backend's budget of " + this.budget + " bytes has "
						+ (this.budget - before) + " left");
			}
		}
		while (!this.used.compareAndSet(before, before + bytes));
		try {
			CpuMemory memory = new CpuMemory(DirectMemory.allocate(bytes));
			this.allocations.add(memory);
			this.liveBuffers.incrementAndGet();
			return memory;
		}
		catch (RuntimeException ex) {
			this.used.addAndGet(-bytes);
			throw ex;
		}
	}

	@Override
	public void free(NativeMemory memory, NativeStream stream) {
		CpuMemory cpu = (CpuMemory) memory;
		((CpuStream) stream).enqueue(new CpuStreamOps.Task(() -> release(cpu), false));
	}

	private void release(CpuMemory memory) {
		if (this.allocations.remove(memory)) {
			DirectMemory.free(memory.raw());
			this.used.addAndGet(-memory.byteSize());
			this.liveBuffers.decrementAndGet();
		}
	}

	@Override
	public void copyToDevice(ByteBuffer src, NativeMemory dst, long dstOffset, long bytes, NativeStream stream) {
		ByteBuffer from = src.duplicate();
		((CpuStream) stream).enqueueTask(() -> copy(from, ((CpuMemory) dst).view(), dstOffset, bytes));
	}

	@Override
	public void copyToHost(NativeMemory src, long srcOffset, ByteBuffer dst, long bytes, NativeStream stream) {
		ByteBuffer to = dst.duplicate();
		((CpuStream) stream).enqueueTask(() -> {
			ByteBuffer from = ((CpuMemory) src).view();
			from.limit((int) (srcOffset + bytes)).position((int) srcOffset);
			// A view per run: a graph runs this copy at every replay.
			to.duplicate().put(from);
		});
	}

	@Override
	public void copyDeviceToDevice(NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset, long bytes,
			NativeStream stream) {
		((CpuStream) stream).enqueueTask(() -> {
			ByteBuffer from = ((CpuMemory) src).view();
			from.limit((int) (srcOffset + bytes)).position((int) srcOffset);
			copy(from, ((CpuMemory) dst).view(), dstOffset, bytes);
		});
	}

	/** CPU devices share the host's memory, so a copy between them is a plain copy on this device's stream. */
	@Override
	public void copyFromPeer(DeviceBackend source, NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset,
			long bytes, NativeStream stream) {
		copyDeviceToDevice(src, srcOffset, dst, dstOffset, bytes, stream);
	}

	private static void copy(ByteBuffer from, ByteBuffer to, long toOffset, long bytes) {
		ByteBuffer source = from.slice();
		source.limit((int) bytes);
		to.position((int) toOffset);
		to.put(source);
	}

	@Override
	public void fill(NativeMemory dst, long offset, long bytes, byte value, NativeStream stream) {
		((CpuStream) stream).enqueueTask(() -> {
			ByteBuffer to = ((CpuMemory) dst).view();
			for (long i = offset; i < offset + bytes; i++) {
				to.put((int) i, value);
			}
		});
	}

	@Override
	public ByteBuffer allocateStaging(long bytes) {
		return DirectMemory.allocate(Math.max(1, bytes));
	}

	@Override
	public void freeStaging(ByteBuffer staging) {
		DirectMemory.free(staging);
	}

	@Override
	public MemoryInfo memoryInfo() {
		long inUse = this.used.get();
		return new MemoryInfo(inUse, this.budget - inUse, this.budget, this.liveBuffers.get());
	}

	@Override
	public void synchronizeDevice() {
		for (CpuStream stream : streamsToCover()) {
			stream.awaitQuietly();
		}
	}

	@Override
	public boolean awaitIdle(long timeoutNanos) {
		long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
		for (CpuStream stream : streamsToCover()) {
			if (!stream.awaitIdle((deadline == 0) ? 1 : deadline)) {
				return false;
			}
		}
		return true;
	}

	@Override
	public boolean abandon(GpuException reason) {
		for (CpuStream stream : stopAccepting(reason)) {
			stream.abandon(reason);
		}
		List<Runnable> dropped = this.workers.shutdownNow();
		boolean stopped = awaitWorkers();
		this.workStillRunning = !stopped;
		log.warn("CPU backend abandoned its pending work at close: {} queued worker tasks dropped{}", dropped.size(),
				stopped ? "" : "; kernels still running after " + WORKER_GRACE_MILLIS
						+ " ms (they ignore interrupts), so their memory is left to the garbage collector");
		return stopped;
	}

	private boolean awaitWorkers() {
		try {
			return this.workers.awaitTermination(WORKER_GRACE_MILLIS, TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	@Override
	public @Nullable String healthProblem() {
		return this.workers.isShutdown() ? "CPU backend closed" : null;
	}

	@Override
	public void close() {
		// Work handed over after the drain (a launch racing with close) ends too, instead of waiting forever.
		GpuException closed = new dev.gpucompute.ContextClosedException("The CPU backend closed before this work ran: it "
				+ "was abandoned at close");
		for (CpuStream stream : stopAccepting(closed)) {
			stream.abandon(closed);
		}
		this.workers.shutdownNow();
		boolean stopped = !this.workStillRunning && awaitWorkers();
		this.streams.clear();
		synchronized (this.busyDefaultStreams) {
			this.busyDefaultStreams.clear();
		}
		int left = 0;
		for (CpuMemory memory : List.copyOf(this.allocations)) {
			if (stopped) {
				release(memory);
			}
			left++;
		}
		if (left > 0) {
			log.debug("CPU backend closed with {} allocations still held{}", left,
					stopped ? "; freed" : "; left to the garbage collector while kernels still run");
		}
	}

	/** A worker task ordered by stream priority, then by submission. */
	private record Task(int priority, long sequence, Runnable body) implements Runnable, Comparable<Task> {

		@Override
		public void run() {
			this.body.run();
		}

		@Override
		public int compareTo(Task other) {
			int byPriority = Integer.compare(other.priority, this.priority);
			return (byPriority != 0) ? byPriority : Long.compare(this.sequence, other.sequence);
		}

	}

}
