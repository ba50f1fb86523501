package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.ContextClosedException;
import dev.gpucompute.ContextMismatchException;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.GpuException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.ByteSizes;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.KernelCompilation;
import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUevent;
import jcuda.driver.JCudaDriver;

/**
 * One CUDA device, opened by {@link CudaBackendProvider}.
 *
 * <p>The device's primary context is retained once and made current on each calling thread the
 * first time that thread uses this backend (a thread-local check, no driver call afterwards; see
 * {@link CudaPrimaryContext}). A virtual thread gets it at every entry, and again after every wait
 * between an entry and a driver call ({@link #resume()}): a context is current per OS thread, and a
 * virtual thread that waits for a monitor (from Java 24 on) or parks may go on on another carrier.
 * The work is done by four package-private rooms, each behind a narrow door: {@link CudaDeviceFacts}
 * (what the device is), {@link CudaStreams} (streams and events), {@link CudaModules} (kernels and
 * launches) and {@link CudaMemoryManager} (device and staging memory); {@link CudaCompletionOps} is the driver side of its completions and drain markers. This
 * class checks that handles belong to it, makes the context current, maps errors, tracks health and
 * closes the rooms in order. Besides the SPI it exposes a few facts for diagnostics and tests.
 */
public final class CudaDeviceBackend implements DeviceBackend {

	private static final Logger logger = LoggerFactory.getLogger(CudaDeviceBackend.class);

	/** Longest wait at close for launches and loads still in a driver call on other threads. */
	private static final long RACING_CALLS_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);

	private final int ordinal;

	/** The retained primary context, and which threads have it current. */
	private final CudaPrimaryContext primary;

	private final CudaDeviceFacts facts;

	private final CudaStreams streams;

	private final CudaModules modules;

	private final CudaMemoryManager memory;

	private final CudaCompletions<CudaStream, CUevent> completions;

	private final CudaGraphs graphs;

	private final AtomicBoolean closed = new AtomicBoolean();

	private volatile boolean closedFlag;

	private final CudaHealth health;

	/** Set when the context gave up on pending work at close: device work may still run then. */
	private volatile boolean abandoned;

	CudaDeviceBackend(BackendConfig config, CudaCompiler compiler) {
		CudaDriver.State driver = CudaDriver.init();
		if (!driver.ok()) {
			throw new BackendUnavailableException(Backend.CUDA, driver.failure(), driver.cause());
		}
		this.ordinal = config.ordinal();
		this.health = new CudaHealth(this.ordinal, config.listener());
		this.primary = CudaPrimaryContext.retain(this.ordinal);
		boolean opened = false;
		try {
			CudaDriver.check(this.primary.setCurrent(), "cuCtxSetCurrent");
			this.facts = CudaDeviceFacts.read(this.primary.device(), this.ordinal, driver.driverVersion());
			CudaCompletionOps events = new CudaCompletionOps(this);
			this.streams = new CudaStreams(this, this.facts, events);
			this.completions = new CudaCompletions<>(events, this.ordinal);
			this.modules = new CudaModules(this, this.facts, compiler, config.compileOptions(), config.kernelCacheDir());
			this.memory = new CudaMemoryManager(this, this.facts, this.streams.legacy(), config.memoryPoolReleaseThreshold());
			this.graphs = new CudaGraphs(new CudaGraphDriver(), new CudaGraphsBackend(this, this.streams));
			this.health.forgetEarlierFailure(cuCtxSynchronize() == CudaErrors.SUCCESS);
			opened = true;
		}
		catch (GpuException ex) {
			throw new BackendUnavailableException(Backend.CUDA, "device " + this.ordinal + " could not be opened: "
					+ ex.getMessage(), ex);
		}
		finally {
			if (!opened) {
				this.primary.release();
			}
		}
		DeviceInfo info = this.facts.info;
		logger.info("CUDA device {}: {} (compute capability {}, {} SMs, {}), driver {}, {} allocator, stream priorities {}..{}",
				this.ordinal, info.name(), info.computeCapability(), info.multiprocessors(),
				ByteSizes.format(info.totalMemoryBytes()), info.driverVersion(),
				this.memory.streamOrderedAllocator() ? "stream-ordered caching" : "synchronous caching", this.facts.leastPriority,
				this.facts.greatestPriority);
	}

	// ---------------------------------------------------------------- context and handles

	/**
	 * Makes this backend's context current on the calling thread, unless it already is (then no
	 * driver call is made), after checking the backend is open and its context usable: after a
	 * sticky failure every call that would submit work fails at once, saying why, instead of with
	 * whatever code the driver returns next.
	 */
	void enter() {
		enterQuietly();
		String problem = healthProblem();
		if (problem != null) {
			throw new GpuException("The CUDA context of device " + this.ordinal + " is unusable after an earlier failure ("
					+ problem + "); every call on it fails until the process restarts");
		}
	}

	/**
	 * {@link #enter()} without the health check, for releasing handles and memory, which must work
	 * (and not throw) after a sticky failure too.
	 */
	void enterQuietly() {
		if (this.closedFlag) {
			throw new ContextClosedException("The CUDA backend of device " + this.ordinal + " is closed");
		}
		int result = this.primary.makeCurrent();
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuCtxSetCurrent", null, null);
		}
	}

	/**
	 * Makes this backend's context current again after a wait that sits between a call's entry and
	 * its next driver call (a monitor or lock another thread held, a park): a virtual thread that
	 * waited may go on on another carrier thread, where this context is not current (the driver call
	 * would fail with {@code CUDA_ERROR_INVALID_CONTEXT}) or another device's is (it would act on that
	 * one). On a platform thread the thread-local record answers, without a driver call. Never throws,
	 * for the paths that release and close: where setting the context fails, the driver call that
	 * follows fails and says so.
	 */
	void resume() {
		this.primary.makeCurrent();
	}

	boolean isClosed() {
		return this.closedFlag;
	}

	CudaStream stream(NativeStream stream) {
		if (stream instanceof CudaStream cudaStream && cudaStream.backend == this) {
			if (!cudaStream.isUsable()) {
				throw cudaStream.unusable();
			}
			return cudaStream;
		}
		throw new ContextMismatchException("Stream " + stream + " does not belong to the CUDA backend of device " + this.ordinal);
	}

	CudaEvent event(NativeEvent event) {
		if (event instanceof CudaEvent cudaEvent && cudaEvent.backend == this) {
			return cudaEvent;
		}
		throw new ContextMismatchException("Event " + event + " does not belong to the CUDA backend of device " + this.ordinal);
	}

	private CudaMemory ownMemory(NativeMemory memory) {
		if (memory instanceof CudaMemory cudaMemory && cudaMemory.backend == this) {
			return cudaMemory;
		}
		throw new ContextMismatchException("Buffer " + memory + " does not belong to the CUDA backend of device " + this.ordinal);
	}

	private CudaMemory liveMemory(NativeMemory memory) {
		return this.memory.check(ownMemory(memory));
	}

	private CudaKernel kernel(NativeKernel kernel) {
		if (kernel instanceof CudaKernel cudaKernel && cudaKernel.backend == this) {
			return cudaKernel;
		}
		throw new ContextMismatchException("Kernel " + kernel + " was not loaded by the CUDA backend of device " + this.ordinal);
	}

	CudaCompletions<CudaStream, CUevent> completions() {
		return this.completions;
	}

	@Override
	public void completionWaitStarted() {
		this.completions.waiterArrived();
	}

	@Override
	public void completionWaitEnded() {
		this.completions.waiterLeft();
	}

	/** The stream that begins or joins a capture: its work so far stays covered by the drain (see {@link CudaStreams#cover}). */
	int coverBeforeCapture(CudaStream stream) {
		return this.streams.cover(stream);
	}

	/** A stream about to be destroyed: its work stays covered by the drain (see {@link CudaStreams#retire}). */
	boolean retire(CudaStream stream) {
		return this.streams.retire(stream);
	}

	void forget(CudaStream stream) {
		this.streams.forget(stream);
		this.memory.streamDestroyed(stream);
	}

	void forget(CudaEvent event) {
		this.streams.forget(event);
	}

	// ---------------------------------------------------------------- errors and health (CudaHealth)

	/** Maps a failed call; a sticky code marks the context lost first. */
	GpuException failure(int code, String call, @Nullable String kernel, @Nullable CudaStream stream) {
		return this.health.failure(code, call, kernel, stream);
	}

	/** A failure found on a stream: it names the stream and the last kernel launched on it. */
	GpuException streamFailure(int code, String call, CudaStream stream) {
		return this.health.failure(code, call, stream.lastKernel, stream);
	}

	/** The failure the work on a stream reported asynchronously, built without any CUDA call. */
	GpuException asyncFailure(int status, CudaStream stream) {
		return this.health.asyncFailure(status, stream);
	}

	void markUnhealthy(String problem) {
		this.health.markUnhealthy(problem, null);
	}

	@Override
	public @Nullable String healthProblem() {
		return this.health.problem();
	}

	// ---------------------------------------------------------------- SPI: device, streams, events

	@Override
	public DeviceInfo info() {
		return this.facts.info;
	}

	@Override
	public NativeStream createStream(StreamPriority priority, String name) {
		enter();
		return this.streams.create(priority, name);
	}

	/**
	 * {@inheritDoc}
	 * <p>A virtual thread gets the legacy default stream in both modes: {@code CU_STREAM_PER_THREAD}
	 * names the stream of the OS thread that makes the call, and a virtual thread changes carrier
	 * threads when it blocks, so its work would be spread over several streams with no order
	 * between them (a download could overtake the kernel that writes its data).
	 */
	@Override
	public NativeStream defaultStream(DefaultStreamMode mode) {
		return this.streams.defaultStream(mode, this.primary.onVirtualThread());
	}

	/**
	 * {@inheritDoc}
	 * <p>{@code cuStreamBeginCapture} in the relaxed mode, so that any carrier of a virtual thread may
	 * end it; the runtime refuses the capturing thread's unsafe calls itself, and other threads' work
	 * goes on (see {@link CudaGraphs}).
	 */
	@Override
	public dev.gpucompute.spi.NativeCapture beginCapture(NativeStream stream) {
		return this.graphs.begin(stream(stream));
	}

	@Override
	public NativeEvent createEvent(boolean timing) {
		enter();
		return this.streams.createEvent(timing);
	}

	// ---------------------------------------------------------------- SPI: kernels

	@Override
	public NativeKernel loadKernel(KernelSource source) {
		enter();
		return this.modules.load(source);
	}

	@Override
	public void launch(NativeKernel nativeKernel, LaunchConfig config, LaunchArgs args, NativeStream nativeStream) {
		CudaKernel kernel = kernel(nativeKernel);
		CudaStream stream = stream(nativeStream);
		enter();
		this.modules.launch(kernel, config, args, stream);
	}

	/**
	 * The host memory this backend keeps for launch arguments and module images: chunks, bytes,
	 * blocks, blocks lent now. Freed at close. Diagnostics and tests.
	 */
	public String hostScratchStats() {
		return this.modules.hostScratch().toString();
	}

	@Override
	public KernelCompilation kernelCompilation() {
		return new KernelCompilation(this.modules.compilerDescription(), this.modules.compileCount(),
				this.modules.cacheHits(), this.modules.prebuiltLoads(), this.modules.kernelCacheDir());
	}

	// ---------------------------------------------------------------- SPI: memory

	@Override
	public NativeMemory allocate(long bytes, NativeStream nativeStream) {
		CudaStream stream = stream(nativeStream);
		enter();
		return this.memory.allocate(bytes, stream);
	}

	@Override
	public void free(NativeMemory nativeMemory, NativeStream nativeStream) {
		CudaMemory memory = ownMemory(nativeMemory);
		CudaStream stream = stream(nativeStream);
		this.memory.free(memory, stream);
	}

	@Override
	public void copyToDevice(ByteBuffer src, NativeMemory dst, long dstOffset, long bytes, NativeStream stream) {
		this.memory.copyToDevice(src, liveMemory(dst), dstOffset, bytes, stream(stream));
	}

	@Override
	public void copyToHost(NativeMemory src, long srcOffset, ByteBuffer dst, long bytes, NativeStream stream) {
		this.memory.copyToHost(liveMemory(src), srcOffset, dst, bytes, stream(stream));
	}

	@Override
	public void copyDeviceToDevice(NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset, long bytes,
			NativeStream stream) {
		this.memory.copyDeviceToDevice(liveMemory(src), srcOffset, liveMemory(dst), dstOffset, bytes, stream(stream));
	}

	/**
	 * {@inheritDoc}
	 * <p>{@code cuMemcpyPeerAsync} between the two devices' primary contexts (see
	 * {@link CudaMemoryManager#copyFromPeer}).
	 */
	@Override
	public void copyFromPeer(DeviceBackend source, NativeMemory src, long srcOffset, NativeMemory dst, long dstOffset,
			long bytes, NativeStream nativeStream) {
		if (!(source instanceof CudaDeviceBackend peer)) {
			throw new ContextMismatchException("A copy between devices needs two CUDA devices; the source is " + source);
		}
		CudaStream stream = stream(nativeStream);
		CudaMemory from = peer.liveMemory(src);
		CudaMemory to = liveMemory(dst);
		this.memory.copyFromPeer(peer, from, srcOffset, to, dstOffset, bytes, stream);
	}

	/** Whether this device reads {@code peer}'s memory directly (peer access, enabled on first copy). */
	public boolean hasPeerAccess(CudaDeviceBackend peer) {
		return this.memory.hasPeerAccess(peer);
	}

	CUcontext cudaContext() {
		return this.primary.context();
	}

	CUdevice cudaDevice() {
		return this.primary.device();
	}

	int ordinal() {
		return this.ordinal;
	}

	@Override
	public void fill(NativeMemory dst, long offset, long bytes, byte value, NativeStream stream) {
		this.memory.fill(liveMemory(dst), offset, bytes, value, stream(stream));
	}

	@Override
	public ByteBuffer allocateStaging(long bytes) {
		return this.memory.allocateStaging(bytes);
	}

	@Override
	public void freeStaging(ByteBuffer buffer) {
		this.memory.freeStaging(buffer);
	}

	@Override
	public MemoryInfo memoryInfo() {
		return this.memory.memoryInfo();
	}

	/**
	 * {@inheritDoc}
	 * <p>{@code cuCtxSynchronize}, unless a capture is open on this device: synchronising the context
	 * then would invalidate it, from any thread and in every capture mode. The wait then uses the
	 * drain's markers on the streams that do not capture, the legacy default stream among them (which
	 * orders after every per-thread default stream); a capturing stream's work from before its capture
	 * is covered by the marker recorded when it began, and what it records since does not run.
	 */
	@Override
	public void synchronizeDevice() {
		enter();
		int result = this.graphs.synchronizeDevice(JCudaDriver::cuCtxSynchronize, this.streams::awaitAll);
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, this.graphs.anyOpen() ? "the device's synchronisation (during a capture)"
					: "cuCtxSynchronize", null, null);
		}
	}

	/**
	 * {@inheritDoc}
	 * <p>Polls marker events, so a kernel that never ends cannot hang shutdown (see
	 * {@link CudaStreams#awaitIdle}); streams destroyed while their work ran (evicted by the pool) are
	 * waited for too. After a sticky failure the device counts as idle (nothing more will run on it).
	 * Then waits for the completion thread to run the callbacks of that work
	 * ({@link CudaCompletions#flush}): it polls, so it may not have seen the work end yet, and the
	 * context's close abandons every completion still pending once this returns, futures of finished
	 * work included. Each step looks once before it minds the deadline, so an idle device whose
	 * callbacks have all run answers {@code true} with no time left (a drain timeout of 0, or one that
	 * the batchers' close used up).
	 */
	@Override
	public boolean awaitIdle(long timeoutNanos) {
		long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
		enterQuietly();
		boolean idle = healthProblem() != null || this.streams.awaitIdle(timeoutNanos);
		return idle && this.completions.flush(deadline);
	}

	/**
	 * {@inheritDoc}
	 * <p>Kernels on the device cannot be stopped, so this always answers that work may still run:
	 * close then neither synchronises the context (which would wait for them) nor frees memory or
	 * unloads modules they may still use; releasing the primary context takes them with it.
	 */
	@Override
	public boolean abandon(GpuException reason) {
		this.abandoned = true;
		logger.warn("CUDA device {}: work still running at close is abandoned; its memory goes with the context",
				this.ordinal);
		return false;
	}

	/** Whether allocations use the stream-ordered allocator ({@code cuMemAllocAsync}). */
	public boolean streamOrderedAllocator() {
		return this.memory.streamOrderedAllocator();
	}

	/**
	 * The caching allocator's figures: bytes in use, cached and reserved from the driver, driver
	 * allocations and frees, reuses. Diagnostics and tests.
	 */
	public String allocatorStats() {
		return this.memory.allocatorStats().toString();
	}

	/** How many allocations the caching allocator asked of the driver so far. */
	public long driverAllocations() {
		return this.memory.allocatorStats().driverAllocations();
	}

	/** The release threshold the caching allocator honours (bytes kept cached at most). */
	public long memoryPoolReleaseThreshold() {
		return this.memory.releaseThreshold();
	}

	/**
	 * Gives all cached device memory back to the driver (as {@code torch.cuda.empty_cache()} does),
	 * each block freed after its last use, ordered on the calling thread's legacy default stream.
	 * @return the bytes released
	 */
	public long releaseCachedMemory() {
		return this.memory.releaseCached(this.streams.legacy());
	}

	// ---------------------------------------------------------------- close

	/**
	 * {@inheritDoc}
	 * <p>Called on a virtual thread, the work runs on a platform thread of its own while the caller
	 * waits: close waits between its driver calls (for the completion thread, for launches still in
	 * a driver call, for the locks of the rooms it empties), and each wait could move a virtual thread
	 * to a carrier where the context is not current.
	 */
	@Override
	public void close() {
		if (!this.closed.compareAndSet(false, true)) {
			return;
		}
		if (this.primary.onVirtualThread()) {
			CudaPrimaryContext.onPlatformThread("gpu-cuda" + this.ordinal + "-close", this::closeHere);
		}
		else {
			closeHere();
		}
	}

	private void closeHere() {
		this.primary.makeCurrent(); // best effort: a failure here only means the driver calls below fail too
		// Captures left open end first: the synchronisation below would invalidate them, and the driver's
		// rules do not define destroying a stream it still captures.
		this.graphs.abortAll();
		// After an abandon kernels may still run: no synchronisation (it would wait for them), no frees
		// or unloads under them (cuMemFree also waits); the primary context's release takes the rest.
		boolean running = this.abandoned;
		int result;
		try {
			result = running ? CudaErrors.SUCCESS
					: this.graphs.synchronizeDevice(JCudaDriver::cuCtxSynchronize, this.streams::awaitAll);
		}
		catch (GpuException ex) { // interrupted while a capture begun meanwhile made it wait with markers
			logger.warn("Closing CUDA device {}: the wait for outstanding work ended early: {}", this.ordinal, ex.getMessage());
			result = CudaErrors.SUCCESS;
		}
		if (result != CudaErrors.SUCCESS) {
			logger.warn("Closing CUDA device {}: outstanding work failed: {}", this.ordinal, CudaErrors.describe(result));
		}
		this.completions.close();
		this.closedFlag = true;
		// Launches and loads that passed enter() before the flag may still be in a driver call, with a
		// host block, a stream and a module of this backend: they get a moment to return before any of
		// that is destroyed (a launch takes microseconds; with none in flight this does not wait).
		int racing = this.modules.awaitCallsInFlight(RACING_CALLS_WAIT_NANOS);
		if (racing > 0) {
			logger.warn("Closing CUDA device {}: {} launches or kernel loads on other threads were still in the driver "
					+ "after {} ms; their host memory is freed when they return", this.ordinal, racing,
					TimeUnit.NANOSECONDS.toMillis(RACING_CALLS_WAIT_NANOS));
		}
		int[] streamsAndEvents = this.streams.destroyAll();
		int[] buffers = running ? new int[2] : this.memory.freeAll();
		if (!running) {
			this.modules.unloadAll();
		}
		if (streamsAndEvents[0] + streamsAndEvents[1] + buffers[0] + buffers[1] > 0) {
			logger.warn("Closing CUDA device {}: released {} streams, {} events, {} device buffers and {} staging buffers "
					+ "that were still open", this.ordinal, streamsAndEvents[0], streamsAndEvents[1], buffers[0], buffers[1]);
		}
		result = this.primary.release();
		if (result != CudaErrors.SUCCESS) {
			logger.warn("Releasing the primary context of CUDA device {} returned {}", this.ordinal, CudaErrors.describe(result));
		}
		logger.debug("CUDA device {} closed", this.ordinal);
	}

	@Override
	public String toString() {
		DeviceInfo info = this.facts.info;
		return "CudaDeviceBackend[device " + this.ordinal + ", " + info.name() + ", " + info.uuid()
				+ (this.closedFlag ? ", closed" : "") + "]";
	}

}
