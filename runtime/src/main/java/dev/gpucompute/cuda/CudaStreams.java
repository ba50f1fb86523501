package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuStreamCreateWithPriority;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.gpucompute.GpuException;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.HostThreads;
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

	/** The drain's marker events, those of streams destroyed while their work ran included. */
	private final DrainMarkers<CudaStream, CUevent> markers;

	CudaStreams(CudaDeviceBackend backend, CudaDeviceFacts facts, CudaCompletions.Ops<CudaStream, CUevent> ops) {
		this.backend = backend;
		this.facts = facts;
		this.markers = new DrainMarkers<>(ops, backend::resume);
		this.legacy = new CudaStream(backend, JCudaDriver.CU_STREAM_LEGACY, "default-legacy", CudaStream.Kind.LEGACY, 0);
	}

	/**
	 * Waits up to {@code timeoutNanos} for the work enqueued so far: records a marker event on the
	 * legacy default stream, which CUDA orders after all work of every blocking stream (the per-thread
	 * default streams of all threads included), and on each created (non-blocking) stream, then polls
	 * them, and the markers of streams destroyed while their work ran ({@link #retire}), with a growing
	 * pause until the deadline ({@link DrainMarkers}). Each marker is queried once even when no time
	 * is left, so an idle device answers {@code true} at any deadline. No thread is started and none
	 * blocks in the driver. The caller has entered the backend.
	 * @return whether all of it finished in time (or the context failed: nothing runs any more)
	 */
	boolean awaitIdle(long timeoutNanos) {
		List<CudaStream> targets = new ArrayList<>(this.streams.size() + 1);
		targets.add(this.legacy);
		targets.addAll(this.streams);
		try {
			return this.markers.awaitIdle(targets, CudaStream::recordForDrain, timeoutNanos);
		}
		catch (GpuException ex) {
			return this.backend.healthProblem() != null; // no marker: idle only when nothing runs any more
		}
	}

	/**
	 * Waits, with no deadline, for the work enqueued so far as {@link #awaitIdle} does: the device's
	 * synchronisation while a capture is open, when {@code cuCtxSynchronize} would invalidate it. A
	 * capturing stream gets no marker; its work from before the capture is covered by the marker
	 * recorded when it began or joined it, and what it records since does not run.
	 * @return the first failure a marker reported ({@code SUCCESS} when none)
	 * @throws GpuException when the calling thread is interrupted meanwhile
	 */
	int awaitAll() {
		List<CudaStream> targets = new ArrayList<>(this.streams.size() + 1);
		targets.add(this.legacy);
		targets.addAll(this.streams);
		int[] failure = new int[1];
		boolean done = this.markers.awaitIdle(targets, CudaStream::recordForDrain, Long.MAX_VALUE / 4, failure);
		if (!done && failure[0] == CudaErrors.SUCCESS) {
			throw new GpuException("Interrupted while waiting for the work of every stream of CUDA device "
					+ this.facts.ordinal);
		}
		return failure[0];
	}

	/**
	 * Covers the work on {@code stream}, about to be destroyed, until it is done (see
	 * {@link DrainMarkers#retire}); the caller holds the stream's lock and has entered the backend.
	 * @return false when the caller must wait for the stream itself before destroying it
	 */
	boolean retire(CudaStream stream) {
		return this.markers.retire(stream, CudaStream::recordUnlessCapturing);
	}

	/**
	 * Covers the work on {@code stream} so far before it begins or joins a capture (see
	 * {@link DrainMarkers#cover}); the caller holds the stream's lock and has entered the backend.
	 * @return the driver's result of the record
	 */
	int cover(CudaStream stream) {
		return this.markers.cover(stream);
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
					"default-per-thread[" + HostThreads.name(Thread.currentThread()) + "]", CudaStream.Kind.PER_THREAD, 0);
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
	 * Destroys every stream and event still tracked, and the markers of retired streams, without
	 * throwing (backend close).
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
		this.markers.destroyAll();
		return new int[] { leftStreams, leftEvents };
	}

}
