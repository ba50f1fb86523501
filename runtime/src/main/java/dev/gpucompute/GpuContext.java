package dev.gpucompute;

import java.time.Duration;

import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.KernelTiming;
import org.jspecify.annotations.Nullable;

/**
 * One device, opened for the whole application: owns the backend, the {@link StreamPool}, the
 * {@link EventRegistry}, the loaded kernels and the device memory of its {@link DeviceBuffer}s.
 *
 * <p>Open one with {@link #builder()}; in Spring it is a singleton bean. It is thread-safe. The
 * application owns it and closes it once; {@link #close()} is idempotent and tears down in order:
 * close its {@link dev.gpucompute.batch.GpuBatcher}s (their queued items still run), stop accepting work, drain the
 * streams (all within the drain timeout), destroy events, destroy pooled streams, free memory,
 * release the device. Every stream, event, buffer and kernel of a closed
 * context raises {@link ContextClosedException} on use, and its {@code close()} is a no-op.
 */
public interface GpuContext extends AutoCloseable {

	/**
	 * A builder with the defaults: auto backend, device 0, a pool of 8 to 32 streams, 30 s acquire and
	 * drain timeouts (each group's defaults and limits are in its record of {@code dev.gpucompute.settings}).
	 */
	static GpuContextBuilder builder() {
		return new GpuContextBuilder();
	}

	/** The backend this context runs on: the one it chose when none was asked for. */
	Backend backend();

	/** Why this backend was chosen (one line, also logged at open). */
	String backendReason();

	/** The device's description: name, ordinal, memory and limits. */
	DeviceInfo device();

	/** The context's stream pool, where callers lease streams. */
	StreamPool streams();

	/** The context's events, for ordering work across streams. */
	EventRegistry events();

	/** What launches kernels, allocates buffers and scopes streams on this context. */
	GpuLauncher launcher();

	/** What a thread's default stream is (see {@link DefaultStreamMode}). */
	DefaultStreamMode defaultStreamMode();

	/** Which launches are timed on the device (see {@link KernelTiming}). */
	KernelTiming kernelTiming();

	/** Longest wait at close for queued batches and work in flight ({@link dev.gpucompute.GpuContextBuilder#drainTimeout}). */
	Duration drainTimeout();

	/**
	 * The default stream of the calling thread: its own in {@link DefaultStreamMode#PER_THREAD} mode
	 * (usable only from that thread), the shared legacy stream otherwise.
	 */
	GpuStream defaultStream();

	/** A snapshot of device memory. */
	MemoryInfo memory();

	/**
	 * A snapshot of the host memory held for copies: host buffers, staging in use against its budget
	 * (with its peak, the copies waiting for it and those that gave up), cached.
	 */
	HostMemoryInfo hostMemory();

	/** Whether the context is open and the device has not hit a sticky error. */
	boolean isHealthy();

	/** Why the context is unhealthy (closed, sticky device error), or {@code null} when healthy. */
	@Nullable String healthProblem();

	/**
	 * Whether the context has stopped accepting work: from the moment {@link #close()}, having closed
	 * the batchers (which still lease streams meanwhile), starts its drain; a closed context refuses
	 * every use.
	 */
	boolean isClosed();

	/**
	 * Blocks until all work on every stream of this context's device is done: pooled, default and
	 * external streams alike. To wait for one stream's work, synchronise that stream
	 * ({@link GpuStream#synchronize()}; the calling thread's current stream is
	 * {@link GpuLauncher#currentStream()}).
	 */
	void synchronizeDevice();

	/**
	 * How busy this device is right now, for placing work: streams leased, threads waiting for a lease
	 * and completions (futures of copies and stream work) not done yet. Cheap; a snapshot.
	 */
	DeviceLoad load();

	/**
	 * A snapshot of how busy a device is ({@link #load()}).
	 *
	 * @param leasedStreams pooled streams leased now
	 * @param waitingForLease threads waiting for a lease
	 * @param pendingWork completions (futures of copies and stream work) not done yet
	 */
	public record DeviceLoad(int leasedStreams, int waitingForLease, int pendingWork) {

		/** One number to compare devices by: everything that is using or waiting for the device. */
		public long total() {
			return (long) this.leasedStreams + this.waitingForLease + this.pendingWork;
		}

	}

	/**
	 * Closes the context: stops accepting work, waits up to the drain timeout for work in flight,
	 * then destroys events, pooled streams and buffers and releases the device. Work still pending
	 * when the drain timeout passes is abandoned: its futures complete exceptionally with a
	 * {@link ContextClosedException} that says so, and threads blocked in a synchronisation return
	 * with it. Idempotent; no thread, memory or native handle of the context outlives it (except
	 * what a kernel that cannot be stopped still uses: a CUDA kernel, or a CPU kernel that ignores
	 * interrupts).
	 */
	void close();

	/**
	 * Closes this context's {@link dev.gpucompute.batch.GpuBatcher}s (their queued items are dispatched within
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
	boolean drain(Duration timeout);

	/**
	 * A snapshot of device memory.
	 *
	 * @param usedBytes bytes held by live {@link DeviceBuffer}s of this context (what they asked for)
	 * @param freeBytes bytes the device reports free (all processes), or the CPU budget left
	 * @param totalBytes the device's total memory, or the CPU backend's budget
	 * @param liveBuffers number of device buffers not yet freed
	 * @param cachedBytes bytes this context holds from the device for reuse but no buffer uses (the
	 * CUDA backend's caching allocator; 0 on the CPU backend). They count as taken in {@code freeBytes}.
	 */
	public record MemoryInfo(long usedBytes, long freeBytes, long totalBytes, long liveBuffers, long cachedBytes) {

		/** A snapshot without cached memory. */
		public MemoryInfo(long usedBytes, long freeBytes, long totalBytes, long liveBuffers) {
			this(usedBytes, freeBytes, totalBytes, liveBuffers, 0);
		}

	}

	/**
	 * A snapshot of the host memory a context holds for copies ({@link GpuContext#hostMemory()}):
	 * page-locked on CUDA, off-heap on the CPU backend. All of it comes from one pool, capped by
	 * {@link GpuContextBuilder#stagingCache(long)} for what is kept between uses. The staging that
	 * array and buffer copies hold at once is bounded by {@link GpuContextBuilder#stagingBudget(long)};
	 * host buffers are not.
	 *
	 * @param hostBufferBytes bytes held by {@link HostBuffer}s: open ones, and closed ones whose copies
	 * are still pending (their pool blocks, which may be up to 12.5% larger than requested)
	 * @param hostBuffers number of those host buffers
	 * @param stagingBytes bytes of staging memory held by array and buffer copies in flight (their
	 * blocks' sizes); at most {@code stagingBudgetBytes}
	 * @param cachedBytes bytes kept for reuse that nothing uses now
	 * @param stagingBudgetBytes the most staging copies may hold at once
	 * @param stagingPeakBytes the most {@code stagingBytes} has been since the context opened
	 * @param stagingWaiting copies waiting now for room in the staging budget
	 * @param stagingTimeouts copies that gave up waiting for staging ({@link StagingExhaustedException})
	 * since the context opened
	 */
	public record HostMemoryInfo(long hostBufferBytes, long hostBuffers, long stagingBytes, long cachedBytes,
			long stagingBudgetBytes, long stagingPeakBytes, int stagingWaiting, long stagingTimeouts) {
	}

}
