package dev.gpucompute.cuda;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuException;
import dev.gpucompute.spi.BackendListener;

/**
 * The health room of a {@link CudaDeviceBackend}: maps failed driver calls to exceptions, and keeps
 * the first sticky failure, after which the context is lost (health DOWN, every call refused). The
 * first sticky failure is counted once, through the backend's listener. Thread-safe.
 */
final class CudaHealth {

	private static final Logger logger = LoggerFactory.getLogger(CudaHealth.class);

	/**
	 * Sticky failures by device ordinal. Every backend of a device shares the device's primary
	 * context, so a sticky error seen by one makes all of them unhealthy.
	 */
	private static final Map<Integer, String> DEVICE_PROBLEMS = new ConcurrentHashMap<>();

	private final int ordinal;

	private final BackendListener listener;

	private volatile @Nullable String problem;

	CudaHealth(int ordinal, BackendListener listener) {
		this.ordinal = ordinal;
		this.listener = listener;
	}

	/**
	 * Forgets a failure another backend of this device recorded, when the device's primary context was
	 * recreated since (a synchronisation of the current one succeeds).
	 */
	void forgetEarlierFailure(boolean contextHealthy) {
		String earlier = DEVICE_PROBLEMS.get(this.ordinal);
		if (earlier != null && contextHealthy) {
			DEVICE_PROBLEMS.remove(this.ordinal, earlier);
		}
	}

	/** Maps a failed call; a sticky code marks the context lost first. */
	GpuException failure(int code, String call, @Nullable String kernel, @Nullable CudaStream stream) {
		String streamName = (stream != null) ? stream.name() : null;
		if (CudaErrors.isSticky(code)) {
			markUnhealthy(CudaErrors.stickyProblem(code, call, kernel, streamName), kernel);
		}
		return CudaErrors.toException(code, call, kernel, streamName, 0);
	}

	/**
	 * The failure the work on a stream reported asynchronously ({@code status} of an event), built
	 * without any CUDA call. A sticky status marks the context lost.
	 */
	GpuException asyncFailure(int status, CudaStream stream) {
		String kernel = stream.lastKernel;
		if (CudaErrors.isSticky(status)) {
			markUnhealthy(CudaErrors.stickyProblem(status, "work on the stream", kernel, stream.name(), false), kernel);
		}
		return CudaErrors.toException(status, "work on the stream", kernel, stream.name(), 0, false);
	}

	/**
	 * Records the first sticky failure: health goes DOWN, and the failure is counted once, against
	 * the kernel that ran last on the stream where it was found (CUDA does not say which kernel of
	 * the context caused it), when one is known.
	 */
	void markUnhealthy(String description, @Nullable String kernel) {
		synchronized (this) {
			if (this.problem != null) {
				return;
			}
			this.problem = description;
		}
		DEVICE_PROBLEMS.putIfAbsent(this.ordinal, description);
		logger.error(description);
		if (kernel != null) {
			try {
				this.listener.kernelFailed(kernel, new GpuException(description));
			}
			catch (RuntimeException ex) {
				logger.warn("The failure listener threw", ex);
			}
		}
	}

	/**
	 * The sticky failure this backend saw, or one another backend of the same device saw (they share
	 * the primary context), or {@code null}.
	 */
	@Nullable String problem() {
		String own = this.problem;
		return (own != null) ? own : DEVICE_PROBLEMS.get(this.ordinal);
	}

}
