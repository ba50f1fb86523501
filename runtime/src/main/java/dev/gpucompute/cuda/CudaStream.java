package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamQuery;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import java.util.Objects;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuException;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;
import jcuda.driver.CUstream;

/**
 * A CUDA stream: a non-blocking stream created by the backend, or one of the two default
 * streams, which wrap the real {@code CU_STREAM_LEGACY} / {@code CU_STREAM_PER_THREAD} handles
 * (never a null handle, so synchronising them always waits for their work).
 */
final class CudaStream implements NativeStream {

	private static final Logger logger = LoggerFactory.getLogger(CudaStream.class);

	enum Kind {

		/** Created by {@code createStream}; destroyed by {@link #destroy()}. */
		CREATED,

		/** {@code CU_STREAM_LEGACY}. */
		LEGACY,

		/** {@code CU_STREAM_PER_THREAD}, one object per host thread. */
		PER_THREAD

	}

	final CudaDeviceBackend backend;

	final CUstream handle;

	private final String name;

	final Kind kind;

	/** The CUDA priority the stream was created with (0 for the default streams). */
	final int priority;

	/** The kernel most recently launched here, named in errors found at synchronisation. */
	volatile @Nullable String lastKernel;

	private static final int LIVE = 0;

	/** The driver may still hold a capture open on the stream: refused, and destroyed instead of pooled. */
	private static final int LOST = 1;

	private static final int DESTROYED = 2;

	/** {@link #LIVE}, {@link #LOST} or {@link #DESTROYED}; one volatile read tells a launch whether it may go on. */
	private volatile int state;

	/** Why the stream was lost; written before {@link #state} becomes {@link #LOST}. */
	private volatile @Nullable String lostReason;

	/**
	 * The capture this stream takes part in (begun here, or joined by waiting for an event recorded in
	 * it), mirroring the driver's: set by {@link CudaGraphs#begin} and {@link #waitEvent} under this
	 * stream's lock (the drain's marker is recorded under it too), cleared by {@link CudaGraphs} once the
	 * driver ended the capture.
	 */
	volatile CudaGraphs.@Nullable Capture capture;

	CudaStream(CudaDeviceBackend backend, CUstream handle, String name, Kind kind, int priority) {
		this.backend = backend;
		this.handle = Objects.requireNonNull(handle, "handle");
		this.name = name;
		this.kind = kind;
		this.priority = priority;
	}

	@Override
	public String name() {
		return this.name;
	}

	/**
	 * {@link CUstream}: the handle work is enqueued with (for the default streams JCuda's
	 * {@code CU_STREAM_LEGACY} / {@code CU_STREAM_PER_THREAD} handles). Makes the context current on the
	 * calling thread, for the driver calls that follow.
	 */
	@Override
	public <T> @Nullable T nativeHandle(Class<T> type) {
		this.backend.enter();
		return (type == CUstream.class) ? type.cast(this.handle) : null;
	}

	@Override
	public dev.gpucompute.spi.@Nullable NativeCapture capture() {
		return this.capture;
	}

	/** A capturing stream must not be synchronised, queried or waited on: the driver would invalidate the capture. */
	private void checkNotCapturing(String call) {
		if (this.capture != null) {
			throw new GpuException(call + " on stream " + this.name + " while it is being captured would invalidate the "
					+ "capture; the runtime refuses such calls first");
		}
	}

	@Override
	public void synchronize() {
		checkUsable();
		checkNotCapturing("cuStreamSynchronize");
		this.backend.enter();
		int result = cuStreamSynchronize(this.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.streamFailure(result, "cuStreamSynchronize", this);
		}
	}

	/**
	 * {@inheritDoc}
	 * <p>Called by the context's housekeeping thread to sample utilisation, which can race with the
	 * pool destroying the stream; the lock shared with {@link #destroy()} keeps a destroyed handle
	 * from reaching the driver (undefined behaviour there), and the race ends in an exception.
	 */
	@Override
	public synchronized boolean query() {
		checkUsable();
		if (this.capture != null) {
			// cuStreamQuery on a capturing stream is illegal (it would invalidate the capture), also from the
			// housekeeping thread that samples utilisation: a stream being captured counts as busy.
			return false;
		}
		this.backend.enter();
		int result = cuStreamQuery(this.handle);
		if (result == CudaErrors.SUCCESS) {
			return true;
		}
		if (result == CudaErrors.NOT_READY) {
			return false;
		}
		throw this.backend.streamFailure(result, "cuStreamQuery", this);
	}

	/**
	 * {@inheritDoc}
	 * <p>The event may be another CUDA device's (a cross-device wait of one {@code GpuDevices}):
	 * {@code cuStreamWaitEvent} accepts events of other contexts and devices.
	 */
	@Override
	public void waitEvent(NativeEvent event) {
		if (!(event instanceof CudaEvent cudaEvent)) {
			throw new dev.gpucompute.ContextMismatchException("Event " + event + " is not a CUDA event");
		}
		checkUsable();
		CudaGraphs.Capture recordedIn = cudaEvent.recordedIn;
		if (recordedIn != null && this.capture == null && this.kind != Kind.CREATED) {
			// The runtime refuses this first (CaptureChecks); the driver would let a blocking stream join,
			// and any later use of the legacy stream would then invalidate the capture.
			throw new GpuException("Stream " + this.name + " is a default stream, which cannot join a capture");
		}
		this.backend.enter();
		if (recordedIn != null && this.capture == null) {
			join(cudaEvent, recordedIn);
			return;
		}
		int result = cuStreamWaitEvent(this.handle, cudaEvent.handle, 0);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuStreamWaitEvent", null, this);
		}
	}

	/**
	 * Waits for an event recorded in {@code capture}, which makes the driver join this stream to it.
	 * Under the lock the drain records its marker with: the work enqueued before is covered by a marker
	 * recorded first, and no drain marker lands in the capture.
	 */
	private synchronized void join(CudaEvent event, CudaGraphs.Capture capture) {
		checkUsable();
		this.backend.resume(); // the lock may have moved a virtual thread to another carrier
		int covered = this.backend.coverBeforeCapture(this);
		if (covered != CudaErrors.SUCCESS) {
			throw this.backend.failure(covered, "cuEventRecord (the drain's marker before the capture)", null, this);
		}
		int result = cuStreamWaitEvent(this.handle, event.handle, 0);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuStreamWaitEvent", null, this);
		}
		capture.joined(this);
	}

	/**
	 * Records a recycled event here and hands it to the backend's completion thread
	 * ({@link CudaCompletions}), which runs {@code callback} when the event completes, with the
	 * failure the event reports, if any. Unlike {@code cuStreamAddCallback}, nothing is inserted into
	 * the stream: later work does not wait for the JVM. The failure is not consumed: CUDA reports it
	 * again at the next synchronisation.
	 *
	 * <p>When the event cannot be recorded because the stream's work already failed (a sticky error
	 * reported by {@code cuEventRecord} itself), the work is over: the callback runs at once, on the
	 * calling thread, with that failure.
	 */
	@Override
	public void whenDone(Consumer<GpuException> callback) {
		Objects.requireNonNull(callback, "callback");
		checkUsable();
		checkNotCapturing("Watching for completion (cuEventRecord, then cuEventQuery)");
		this.backend.enter();
		this.backend.completions().whenDone(this, callback);
	}

	/**
	 * {@inheritDoc}
	 * <p>A no-op: a kernel failure on CUDA is sticky, it ends the whole context (every later call
	 * fails and health goes DOWN), so there is no per-stream failure to keep from the next holder.
	 */
	@Override
	public void discardFailures() {
	}

	/** {@code CU_STREAM_PER_THREAD} names the calling thread's own stream, so only that thread may use it. */
	@Override
	public boolean usableFromAnyThread() {
		return this.kind != Kind.PER_THREAD;
	}

	/**
	 * Records {@code event} here for the backend's drain; under the lock shared with {@link #destroy()},
	 * so a destroyed handle never reaches the driver. Returns the driver's result,
	 * {@link DrainMarkers#DESTROYED} when the stream was destroyed (its work, if any, is covered by the
	 * marker it retired with), or {@link DrainMarkers#CAPTURING} when it takes part in a capture (its
	 * work from before is covered by the marker recorded when it began or joined the capture).
	 */
	synchronized int recordForDrain(jcuda.driver.CUevent event) {
		if (this.state == DESTROYED) {
			return DrainMarkers.DESTROYED;
		}
		return recordUnlessCapturing(event);
	}

	/**
	 * Records the marker the stream retires with ({@link CudaStreams#retire}); the caller, its destroy,
	 * holds the lock. {@link DrainMarkers#CAPTURING} when a marker here would be recorded into a capture.
	 */
	int recordUnlessCapturing(jcuda.driver.CUevent event) {
		if (this.capture != null || this.lostReason != null) {
			// A marker here would be captured, not run, and querying it is illegal.
			return DrainMarkers.CAPTURING;
		}
		// The caller entered before it waited for this lock (held by a query or a destroy), which may
		// have moved a virtual thread to another carrier.
		this.backend.resume();
		return cuEventRecord(event, this.handle);
	}

	/**
	 * Takes the stream out of use: the driver may still capture it after an end that failed, so work
	 * enqueued here would be recorded, not run. Later calls are refused, and its pool destroys it instead
	 * of handing it to another holder ({@link #isReusable()}).
	 */
	void markLost(String reason) {
		this.lostReason = reason;
		synchronized (this) {
			if (this.state == LIVE) {
				this.state = LOST;
			}
		}
	}

	/** False once the driver may still hold a capture open here (see {@link #markLost}). */
	@Override
	public boolean isReusable() {
		return this.state == LIVE;
	}

	/**
	 * {@inheritDoc}
	 * <p>{@code cuStreamDestroy} returns at once and the device finishes the work already enqueued
	 * here (a download into a page-locked block, say, of a lease returned before its future
	 * completed). The backend's drain must still wait for that work, so the stream first retires
	 * with a marker event the drain polls ({@link CudaStreams#retire}); where no marker can be
	 * recorded, it waits for the stream itself. Retiring precedes forgetting: a drain that no longer
	 * lists the stream finds its marker. The driver calls come before the forgetting, which may wait
	 * for the locks of the backend's rooms: a virtual thread that waits there may go on on a carrier
	 * where the context is not current.
	 */
	@Override
	public synchronized void destroy() {
		if (this.kind != Kind.CREATED || this.state == DESTROYED) {
			return; // default streams belong to CUDA
		}
		this.state = DESTROYED;
		int waited;
		int result;
		try {
			if (this.backend.isClosed()) {
				return;
			}
			this.backend.enterQuietly();
			if (!endCaptureBeforeDestroy()) {
				return;
			}
			boolean covered = this.backend.retire(this);
			this.backend.resume(); // again: retiring waits for the retired markers' lock
			waited = covered ? CudaErrors.SUCCESS : cuStreamSynchronize(this.handle);
			result = cuStreamDestroy(this.handle);
		}
		finally {
			this.backend.forget(this);
		}
		if (waited != CudaErrors.SUCCESS) {
			logger.debug("cuStreamSynchronize({}) before its destruction returned {}", this.name, CudaErrors.name(waited));
		}
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuStreamDestroy", null, this);
		}
	}

	/**
	 * Ends a capture this stream still takes part in (at a close, say) before it is destroyed, since
	 * the driver's rules do not define destroying a capturing stream; the caller holds the lock and has
	 * entered the backend.
	 * @return false when the driver may still capture the stream: its handle is then left to the
	 * release of the context (its work from before the capture is covered by the marker recorded then)
	 */
	private boolean endCaptureBeforeDestroy() {
		CudaGraphs.Capture open = this.capture;
		if (open != null) {
			open.abort();
			this.backend.resume();
		}
		if (this.lostReason != null) {
			logger.warn("Stream {} is not destroyed: {}; its handle goes with the context", this.name, this.lostReason);
			return false;
		}
		return true;
	}

	/** Destroys without throwing (backend shutdown, after every capture was ended). */
	synchronized void destroyQuietly() {
		if (this.kind != Kind.CREATED || this.state == DESTROYED) {
			return;
		}
		boolean lost = this.lostReason != null;
		this.state = DESTROYED;
		if (lost) {
			return; // still captured by the driver: released with the context
		}
		int result = cuStreamDestroy(this.handle);
		if (result != CudaErrors.SUCCESS) {
			logger.debug("cuStreamDestroy({}) at close returned {}", this.name, CudaErrors.name(result));
		}
	}

	boolean isDestroyed() {
		return this.state == DESTROYED;
	}

	/** Throws when the stream was destroyed (a caller bug the context normally prevents) or lost. */
	void checkUsable() {
		if (this.state != LIVE) {
			throw unusable();
		}
	}

	/** Whether work may be enqueued here: one volatile read, for the launch path. */
	boolean isUsable() {
		return this.state == LIVE;
	}

	GpuException unusable() {
		if (this.state == DESTROYED) {
			return new GpuException("Stream " + this.name + " was destroyed");
		}
		return new GpuException("Stream " + this.name + " is out of use: " + this.lostReason + ". Its work would be "
				+ "recorded into that capture instead of run; close its lease, and the pool replaces it");
	}

	@Override
	public String toString() {
		return "CudaStream[" + this.name + ", " + this.kind + ", priority " + this.priority + "]";
	}

}
