package dev.gpucompute.cuda;

import java.util.concurrent.atomic.AtomicBoolean;

import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuException;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;
import jcuda.driver.CUevent;

/**
 * A CUDA event, created with {@code CU_EVENT_DISABLE_TIMING} unless it is a timing event. An event
 * never recorded is complete (CUDA behaves so: query succeeds, synchronize returns at once).
 */
final class CudaEvent implements NativeEvent {

	private static final Logger logger = LoggerFactory.getLogger(CudaEvent.class);

	final CudaDeviceBackend backend;

	final CUevent handle;

	private final boolean timing;

	/** The stream of the most recent record, named in errors. */
	private volatile @Nullable CudaStream recordedOn;

	/**
	 * The capture the most recent record was made in (the driver records it as a point of that graph),
	 * or null: a stream that waits for this event joins that capture.
	 */
	volatile CudaGraphs.@Nullable Capture recordedIn;

	/** Set once, by whichever destroy comes first, so the handle is never destroyed twice. */
	private final AtomicBoolean destroyed = new AtomicBoolean();

	CudaEvent(CudaDeviceBackend backend, CUevent handle, boolean timing) {
		this.backend = backend;
		this.handle = handle;
		this.timing = timing;
	}

	@Override
	public boolean timing() {
		return this.timing;
	}

	@Override
	public void record(NativeStream stream) {
		CudaStream cudaStream = this.backend.stream(stream);
		checkUsable();
		this.backend.enter();
		int result = cuEventRecord(this.handle, cudaStream.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuEventRecord", null, cudaStream);
		}
		this.recordedOn = cudaStream;
		this.recordedIn = cudaStream.capture;
	}

	@Override
	public void synchronize() {
		checkUsable();
		this.backend.enter();
		int result = cuEventSynchronize(this.handle);
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuEventSynchronize");
		}
	}

	@Override
	public boolean query() {
		checkUsable();
		this.backend.enter();
		int result = cuEventQuery(this.handle);
		if (result == CudaErrors.SUCCESS) {
			return true;
		}
		if (result == CudaErrors.NOT_READY) {
			return false;
		}
		throw failure(result, "cuEventQuery");
	}

	@Override
	public float elapsedMillisSince(NativeEvent start) {
		CudaEvent from = this.backend.event(start);
		if (!this.timing || !from.timing) {
			throw new GpuException("Elapsed time needs two timing events (created with timing = true); "
					+ (this.timing ? "the start event" : "this event") + " has timing disabled");
		}
		if (from.recordedOn == null || this.recordedOn == null) {
			throw new GpuException("Elapsed time needs both events recorded; " + ((from.recordedOn == null) ? "the start event"
					: "this event") + " was never recorded");
		}
		// cuEventElapsedTime answers NOT_READY until both events completed; the SPI promises to wait.
		from.synchronize();
		synchronize();
		float[] millis = new float[1];
		int result = cuEventElapsedTime(millis, from.handle, this.handle);
		if (result != CudaErrors.SUCCESS) {
			throw failure(result, "cuEventElapsedTime");
		}
		return millis[0];
	}

	@Override
	public void destroy() {
		if (!this.destroyed.compareAndSet(false, true)) {
			return;
		}
		this.backend.forget(this);
		if (this.backend.isClosed()) {
			return;
		}
		this.backend.enterQuietly();
		int result = cuEventDestroy(this.handle);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuEventDestroy", null, null);
		}
	}

	/** Destroys without throwing (backend shutdown). */
	void destroyQuietly() {
		if (!this.destroyed.compareAndSet(false, true)) {
			return;
		}
		int result = cuEventDestroy(this.handle);
		if (result != CudaErrors.SUCCESS) {
			logger.debug("cuEventDestroy at close returned {}", CudaErrors.name(result));
		}
	}

	/** A destroyed handle must not reach the driver, which may have reused it for another event. */
	private void checkUsable() {
		if (this.destroyed.get()) {
			throw new GpuException("Event " + this + " was destroyed");
		}
	}

	private GpuException failure(int result, String call) {
		CudaStream stream = this.recordedOn;
		return (stream != null) ? this.backend.streamFailure(result, call, stream)
				: this.backend.failure(result, call, null, null);
	}

	@Override
	public String toString() {
		CudaStream stream = this.recordedOn;
		return "CudaEvent[" + (this.timing ? "timing" : "no timing") + ((stream != null) ? ", recorded on " + stream.name() : "")
				+ "]";
	}

}
