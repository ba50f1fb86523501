package dev.gpucompute.cpu;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.gpucompute.Backend;
import dev.gpucompute.CpuKernel;
import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.MemoryInfo;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.UnsupportedBackendOperationException;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.DeviceBackend;
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

	private final Set<CpuStream> streams = ConcurrentHashMap.newKeySet();

	private final CpuStream legacy;

	private final ThreadLocal<CpuStream> perThread;

	private final AtomicInteger perThreadCount = new AtomicInteger();

	CpuDeviceBackend(BackendConfig config) {
		this.threads = config.cpuThreads();
		this.budget = config.cpuMemoryBudgetBytes();
		AtomicInteger workerNumber = new AtomicInteger();
		this.workers = new ThreadPoolExecutor(this.threads, this.threads, 0, TimeUnit.MILLISECONDS,
				new PriorityBlockingQueue<>(), (runnable) -> {
					Thread thread = new Thread(runnable, "gpu-cpu-worker-" + workerNumber.incrementAndGet());
					thread.setDaemon(true);
					return thread;
				});
		this.workers.prestartAllCoreThreads();
		this.info = new DeviceInfo(Backend.CPU, 0, "CPU (" + this.threads + " worker threads)", "CPU-0", "", "",
				this.threads, this.budget, "Java " + Runtime.version().feature(), MAX_THREADS_PER_BLOCK, MAX_BLOCK,
				MAX_GRID, MAX_SHARED, 1);
		this.legacy = new CpuStream(this, "default-legacy", 0, false);
		this.streams.add(this.legacy);
		this.perThread = ThreadLocal.withInitial(() -> {
			CpuStream stream = new CpuStream(this,
					"default-per-thread[" + Thread.currentThread().getName() + "]", 0, false);
			this.perThreadCount.incrementAndGet();
			this.streams.add(stream);
			return stream;
		});
	}

	@Override
	public DeviceInfo info() {
		return this.info;
	}

	/**
	 * Hands a task to the workers. After {@link #close()} the task is dropped, like the queued tasks
	 * {@code shutdownNow} drops: the operation never completes, so the operations queued behind it
	 * never start. Failing it instead would complete it on this thread and start the next one here
	 * too, which fails the same way: one stack frame chain per queued operation.
	 */
	void execute(int priority, Runnable task) {
		try {
			this.workers.execute(new Task(priority, this.taskSequence.getAndIncrement(), task));
		}
		catch (RejectedExecutionException ex) {
			this.droppedAfterClose.incrementAndGet();
		}
	}

	/** Tasks dropped because they were handed over after close. */
	long droppedAfterClose() {
		return this.droppedAfterClose.get();
	}

	void forget(CpuStream stream) {
		this.streams.remove(stream);
	}

	@Override
	public NativeStream createStream(StreamPriority priority, String name) {
		CpuStream stream = new CpuStream(this, name, (priority == StreamPriority.HIGH) ? 1 : 0, true);
		this.streams.add(stream);
		return stream;
	}

	@Override
	public NativeStream defaultStream(DefaultStreamMode mode) {
		return (mode == DefaultStreamMode.LEGACY) ? this.legacy : this.perThread.get();
	}

	@Override
	public NativeEvent createEvent(boolean timing) {
		return new CpuEvent(timing);
	}

	@Override
	public NativeKernel loadKernel(KernelSource source) {
		return new CpuKernelHandle(source);
	}

	@Override
	public void launch(NativeKernel kernel, LaunchConfig config, LaunchArgs args, NativeStream stream) {
		KernelSource source = ((CpuKernelHandle) kernel).source();
		CpuKernel implementation = source.cpu();
		CpuStream cpuStream = (CpuStream) stream;
		if (implementation == null) {
			throw new UnsupportedBackendOperationException("Kernel '" + source.name()
					+ "' has no CPU implementation, so it cannot run on the CPU backend; add one with "
					+ "KernelSource.cpu(...) or run on CUDA");
		}
		CpuArgs captured = new CpuArgs(args);
		cpuStream.enqueue(new BlockRun(source.name(), cpuStream, implementation, config, captured));
	}

	/**
	 * Spreads a grid's blocks over the workers: each worker takes the next run of blocks until none
	 * is left. A grid that one worker runs alone skips the shared counters.
	 */
	private final class BlockRun implements Consumer<CompletableFuture<Void>> {

		private final String kernel;

		private final CpuStream stream;

		private final CpuKernel implementation;

		private final LaunchConfig config;

		private final CpuArgs args;

		BlockRun(String kernel, CpuStream stream, CpuKernel implementation, LaunchConfig config, CpuArgs args) {
			this.kernel = kernel;
			this.stream = stream;
			this.implementation = implementation;
			this.config = config;
			this.args = args;
		}

		@Override
		public void accept(CompletableFuture<Void> done) {
			long blocks = this.config.grid().volume();
			int tasks = (int) Math.min(CpuDeviceBackend.this.threads, blocks);
			if (tasks == 1) {
				execute(this.stream.priority, () -> this.stream.finish(done, runBlocks(newBlock(), 0, blocks)));
				return;
			}
			AtomicLong next = new AtomicLong();
			AtomicInteger remaining = new AtomicInteger(tasks);
			AtomicReference<Throwable> failure = new AtomicReference<>();
			long chunk = Math.max(1, blocks / (tasks * 8L));
			for (int t = 0; t < tasks; t++) {
				execute(this.stream.priority, () -> {
					CpuBlock block = newBlock();
					long start;
					while (failure.get() == null && (start = next.getAndAdd(chunk)) < blocks) {
						Throwable failed = runBlocks(block, start, Math.min(blocks, start + chunk));
						if (failed != null) {
							failure.compareAndSet(null, failed);
						}
					}
					// The stream moves on only when every worker has left the kernel, also after a failure.
					if (remaining.decrementAndGet() == 0) {
						this.stream.finish(done, failure.get());
					}
				});
			}
		}

		private CpuBlock newBlock() {
			return new CpuBlock(this.config.grid(), this.config.block(), this.config.sharedMemoryBytes());
		}

		/** Runs blocks {@code start} (inclusive) to {@code end}; returns the failure, or null. */
		private Throwable runBlocks(CpuBlock block, long start, long end) {
			try {
				block.moveTo(start);
				this.implementation.run(block, this.args);
				for (long b = start + 1; b < end; b++) {
					block.advance();
					this.implementation.run(block, this.args);
				}
				return null;
			}
			catch (Throwable ex) {
				return new KernelLaunchException(this.kernel, this.stream.name(), "the CPU implementation threw " + ex, ex);
			}
		}

	}

	@Override
	public NativeMemory allocate(long bytes, NativeStream stream) {
		if (bytes < 1) {
			throw new IllegalArgumentException("Allocation size must be positive, got " + bytes);
		}
		long now = this.used.addAndGet(bytes);
		if (now > this.budget) {
			this.used.addAndGet(-bytes);
			throw new GpuOutOfMemoryException(bytes, "the CPU backend's budget of " + this.budget + " bytes has "
					+ (this.budget - (now - bytes)) + " left");
		}
		try {
			CpuMemory memory = new CpuMemory(DirectMemory.allocate(bytes));
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
		((CpuStream) stream).enqueueTask(() -> release(cpu));
	}

	private void release(CpuMemory memory) {
		DirectMemory.free(memory.raw());
		this.used.addAndGet(-memory.byteSize());
		this.liveBuffers.decrementAndGet();
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
			from.position((int) srcOffset).limit((int) (srcOffset + bytes));
			to.put(from);
		});
	}

	@Override
	public void copyDeviceToDevice(NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset, long bytes,
			NativeStream stream) {
		((CpuStream) stream).enqueueTask(() -> {
			ByteBuffer from = ((CpuMemory) src).view();
			from.position((int) srcOffset).limit((int) (srcOffset + bytes));
			copy(from, ((CpuMemory) dst).view(), dstOffset, bytes);
		});
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
		GpuException first = null;
		for (CpuStream stream : List.copyOf(this.streams)) {
			try {
				stream.tail().join();
			}
			catch (RuntimeException ex) {
				if (first == null) {
					first = new GpuException("Device synchronisation failed", ex);
				}
			}
		}
		if (first != null) {
			throw first;
		}
	}

	@Override
	public String healthProblem() {
		return this.workers.isShutdown() ? "CPU backend closed" : null;
	}

	@Override
	public void close() {
		List<Runnable> dropped = new ArrayList<>(this.workers.shutdownNow());
		this.streams.clear();
		if (!dropped.isEmpty()) {
			// Work still queued at close belongs to streams the context could not drain in time.
			org.slf4j.LoggerFactory.getLogger(CpuDeviceBackend.class)
				.warn("CPU backend closed with {} queued worker tasks dropped", dropped.size());
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
