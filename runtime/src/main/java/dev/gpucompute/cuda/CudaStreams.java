package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventQuery;
import static jcuda.driver.JCudaDriver.cuStreamCreateWithPriority;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

import dev.gpucompute.DefaultStreamMode;
import dev.gpucompute.StreamPriority;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;
import jcuda.driver.JCudaDriver;

/**
 * The streams-and-events room of a {@link CudaDeviceBackend}: creates non-blocking streams and
 * events, hands out the default streams, and tracks what it created so that the backend's close
 * can destroy what callers left behind. Thread-safe.
 */
final class CudaStreams {

	/** Per host thread: its per-thread default stream (one slot; replaced when another backend asks). */
	private static final ThreadLocal<CudaStream[]> PER_THREAD = ThreadLocal.withInitial(() -> new CudaStream[1]);

	private final CudaDeviceBackend backend;

	private final CudaDeviceFacts facts;

	private final CudaStream legacy;

	private final Set<CudaStream> streams = ConcurrentHashMap.newKeySet();

	private final Set<CudaEvent> events = ConcurrentHashMap.newKeySet();

	CudaStreams(CudaDeviceBackend backend, CudaDeviceFacts facts) {
		this.backend = backend;
		this.facts = facts;
		this.legacy = new CudaStream(backend, JCudaDriver.CU_STREAM_LEGACY, "default-legacy", CudaStream.Kind.LEGACY, 0);
	}

	/**
	 * Waits up to {@code timeoutNanos} for the work enqueued so far: records a marker event on the
	 * legacy default stream, which CUDA orders after all work of every blocking stream (the per-thread
	 * default streams of all threads included), and on each created (non-blocking) stream, then polls
	 * them with a growing pause until the deadline. No thread is started and none blocks in the
	 * driver. The caller has entered the backend.
	 * @return whether all of it finished in time (or the context failed: nothing runs any more)
	 */
	boolean awaitIdle(long timeoutNanos) {
		List<CudaStream> targets = new ArrayList<>(this.streams.size() + 1);
		targets.add(this.legacy);
		targets.addAll(this.streams);
		List<CUevent> markers = new ArrayList<>(targets.size());
		try {
			for (CudaStream stream : targets) {
				CUevent marker = new CUevent();
				if (cuEventCreate(marker, CUevent_flags.CU_EVENT_DISABLE_TIMING) != CudaErrors.SUCCESS) {
					return this.backend.healthProblem() != null;
				}
				markers.add(marker);
				int recorded = stream.recordForDrain(marker);
				if (recorded != CudaErrors.SUCCESS && recorded != -1) {
					return true;
				}
			}
			long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
			long pauseNanos = 20_000;
			for (int i = 0; i < markers.size();) {
				if (cuEventQuery(markers.get(i)) != CudaErrors.NOT_READY) {
					i++; // done, or the context failed
					continue;
				}
				long left = deadline - System.nanoTime();
				if (left <= 0 || Thread.currentThread().isInterrupted()) {
					return false;
				}
				LockSupport.parkNanos(Math.min(left, pauseNanos));
				pauseNanos = Math.min(pauseNanos * 2, 5_000_000);
				this.backend.enterQuietly(); // a virtual thread may be on another carrier after parking
			}
			return true;
		}
		finally {
			for (CUevent marker : markers) {
				cuEventDestroy(marker);
			}
		}
	}

	/** The {@code CU_STREAM_LEGACY} stream, which always exists. */
	CudaStream legacy() {
		return this.legacy;
	}

	/** A new non-blocking stream; the caller has entered the backend. */
	CudaStream create(StreamPriority priority, String name) {
		int cudaPriority = this.facts.cudaPriority(priority);
		CUstream handle = new CUstream();
		int result = cuStreamCreateWithPriority(handle, CUstream_flags.CU_STREAM_NON_BLOCKING, cudaPriority);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuStreamCreateWithPriority", null, null);
		}
		CudaStream stream = new CudaStream(this.backend, handle, name, CudaStream.Kind.CREATED, cudaPriority);
		this.streams.add(stream);
		return stream;
	}

	/**
	 * The default stream of the calling thread. A virtual thread gets the legacy default stream in
	 * both modes: {@code CU_STREAM_PER_THREAD} names the stream of the OS thread that makes the call,
	 * and a virtual thread changes carrier threads when it blocks, so its work would be spread over
	 * several streams with no order between them.
	 */
	CudaStream defaultStream(DefaultStreamMode mode, boolean virtualThread) {
		if (mode == DefaultStreamMode.LEGACY || virtualThread) {
			return this.legacy;
		}
		CudaStream[] slot = PER_THREAD.get();
		CudaStream stream = slot[0];
		if (stream == null || stream.backend != this.backend) {
			stream = new CudaStream(this.backend, JCudaDriver.CU_STREAM_PER_THREAD,
					"default-per-thread[" + Thread.currentThread().getName() + "]", CudaStream.Kind.PER_THREAD, 0);
			slot[0] = stream;
		}
		return stream;
	}

	/** A new event; the caller has entered the backend. */
	CudaEvent createEvent(boolean timing) {
		CUevent handle = new CUevent();
		int result = cuEventCreate(handle, timing ? CUevent_flags.CU_EVENT_DEFAULT : CUevent_flags.CU_EVENT_DISABLE_TIMING);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuEventCreate", null, null);
		}
		CudaEvent event = new CudaEvent(this.backend, handle, timing);
		this.events.add(event);
		return event;
	}

	void forget(CudaStream stream) {
		this.streams.remove(stream);
	}

	void forget(CudaEvent event) {
		this.events.remove(event);
	}

	/**
	 * Destroys every stream and event still tracked, without throwing (backend close).
	 * @return how many streams and events were left, for the close report
	 */
	int[] destroyAll() {
		int leftStreams = this.streams.size();
		for (CudaStream stream : List.copyOf(this.streams)) {
			stream.destroyQuietly();
		}
		this.streams.clear();
		int leftEvents = this.events.size();
		for (CudaEvent event : List.copyOf(this.events)) {
			event.destroyQuietly();
		}
		this.events.clear();
		return new int[] { leftStreams, leftEvents };
	}

}
