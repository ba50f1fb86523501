package dev.gpucompute.cuda;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import dev.gpucompute.GpuException;

/**
 * How the backend's drain learns that the work enqueued so far is done, streams destroyed before
 * it included. {@link #awaitIdle} records a marker event on each live stream and polls the markers
 * with a growing pause until they complete or the deadline passes; no thread is started and none
 * blocks in the driver.
 *
 * <p>A stream destroyed while work on it may still run (the pool evicts an idle stream of one
 * priority to make room for the other, and an idle lease may still have a download in flight) is
 * no longer among the live streams, and {@code cuStreamDestroy} returns at once while the device
 * finishes that work. Its completions and the page-locked blocks that work writes must still wait
 * for it, so {@link #retire} records a marker on the stream just before it is destroyed, and the
 * drain waits for that marker as for the others (an event stays valid after its stream is
 * destroyed; it completes when the work before it does). Completed retired markers are destroyed
 * when the next stream retires or the next drain looks, so they stay few.
 *
 * <p>The driver calls are those of the completions ({@link CudaCompletions.Ops}), so the ordering
 * is tested with the same fake. Thread-safe: the retired markers are guarded by their list, since a
 * drain and a retiring stream may query and destroy them at once.
 *
 * @param <S> the stream type
 * @param <E> the event type
 */
final class DrainMarkers<S, E> {

	/** Records a drain's marker on a live stream. */
	interface Recorder<S, E> {

		/** {@code cuEventRecord}: a {@code CUresult}, or {@link #DESTROYED} when the stream was destroyed meanwhile. */
		int record(S stream, E marker);

	}

	/** What a {@link Recorder} answers for a stream destroyed since it was listed (it retired first). */
	static final int DESTROYED = -1;

	/**
	 * What a {@link Recorder} answers for a stream that takes part in a capture: a marker recorded there
	 * would become a node of the graph, not run, and querying it is illegal. The work enqueued there
	 * before the capture is covered by the marker {@link #cover} recorded when the stream began or
	 * joined it; nothing enqueued since runs.
	 */
	static final int CAPTURING = -2;

	private static final long FIRST_PAUSE_NANOS = 20_000;

	private static final long MAX_PAUSE_NANOS = 5_000_000;

	private final CudaCompletions.Ops<S, E> ops;

	/**
	 * Makes the context current again after a wait (a pause, or the retired markers' lock): a virtual
	 * thread that waited may go on on another carrier thread, where this context is not current, and
	 * the next driver call would fail with {@code CUDA_ERROR_INVALID_CONTEXT} or act on another context.
	 */
	private final Runnable afterWait;

	/** Markers on streams destroyed before their work was seen done; guarded by itself. */
	private final List<E> retired = new ArrayList<>();

	DrainMarkers(CudaCompletions.Ops<S, E> ops, Runnable afterWait) {
		this.ops = ops;
		this.afterWait = afterWait;
	}

	/**
	 * Waits up to {@code timeoutNanos} for the work enqueued so far on {@code streams} and on the
	 * streams retired before. Every marker is queried once before the deadline is looked at, so a
	 * timeout of 0 (or a drain budget already spent) still answers {@code true} for an idle device.
	 * The caller has entered the backend.
	 * @return whether all of it finished in time (also when a marker cannot be recorded because the
	 * context failed: nothing runs any more); {@code false} when a marker could not be recorded for
	 * another reason, since that stream's work was not waited for
	 * @throws GpuException when a marker cannot be created
	 */
	boolean awaitIdle(Collection<S> streams, Recorder<S, E> recorder, long timeoutNanos) {
		return awaitIdle(streams, recorder, timeoutNanos, new int[1]);
	}

	/**
	 * {@link #awaitIdle(Collection, Recorder, long)}, telling the first failure it met: a record that
	 * failed, or a marker whose query reported one (a kernel's sticky error), in {@code failure[0]}
	 * ({@code SUCCESS} when none), for a caller that must report it (a synchronisation of the device).
	 */
	boolean awaitIdle(Collection<S> streams, Recorder<S, E> recorder, long timeoutNanos, int[] failure) {
		long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
		List<E> markers = new ArrayList<>(streams.size());
		failure[0] = CudaErrors.SUCCESS;
		boolean uncovered = false;
		try {
			for (S stream : streams) {
				E marker = this.ops.createEvent();
				markers.add(marker);
				int recorded = recorder.record(stream, marker);
				if (recorded == CudaErrors.SUCCESS || recorded == DESTROYED || recorded == CAPTURING) {
					continue;
				}
				// Not recorded: that stream's work is not waited for. Only a context lost for good means nothing
				// runs any more; any other failure leaves the stream's work unknown.
				noteFailure(failure, recorded);
				if (CudaErrors.isSticky(recorded)) {
					return true;
				}
				uncovered = true;
				markers.remove(markers.size() - 1);
				this.ops.destroy(marker);
			}
			// Read after the live markers are recorded: a stream destroyed meanwhile retired before it
			// left the live ones, so its marker is in the list by now.
			long pauseNanos = FIRST_PAUSE_NANOS;
			int done = 0;
			while (true) {
				int state;
				while (done < markers.size() && (state = this.ops.query(markers.get(done))) != CudaErrors.NOT_READY) {
					noteFailure(failure, state);
					done++; // done, or the context failed
				}
				if (done == markers.size() && retiredDone()) {
					return !uncovered;
				}
				long left = deadline - System.nanoTime();
				if (left <= 0 || Thread.currentThread().isInterrupted()) {
					return false;
				}
				this.ops.nap(this, Math.min(left, pauseNanos));
				pauseNanos = Math.min(pauseNanos * 2, MAX_PAUSE_NANOS);
				this.afterWait.run();
			}
		}
		finally {
			for (E marker : markers) {
				this.ops.destroy(marker);
			}
		}
	}

	private static void noteFailure(int[] failure, int code) {
		if (failure[0] == CudaErrors.SUCCESS && code != CudaErrors.SUCCESS) {
			failure[0] = code;
		}
	}

	/**
	 * Covers the work enqueued on {@code stream}, which is about to be destroyed, until it is done:
	 * records a marker there that later drains wait for. The caller holds the stream's lock (no drain
	 * records on it meanwhile) and has entered the backend; it enters again before its next driver
	 * call, since keeping the marker may wait for the retired markers' lock.
	 * @param recorder records the marker; {@link #CAPTURING} for a stream that takes part in a capture
	 * @return whether the work is covered, or over for good (the context failed); {@code false} when
	 * no marker could be recorded (or the stream captures, where a marker would not run), and the
	 * caller must not count on one
	 */
	boolean retire(S stream, Recorder<S, E> recorder) {
		retiredDone();
		E marker;
		try {
			marker = this.ops.createEvent();
		}
		catch (GpuException ex) {
			return false;
		}
		int recorded = recorder.record(stream, marker);
		if (recorded != CudaErrors.SUCCESS) {
			this.ops.destroy(marker);
			return CudaErrors.isSticky(recorded);
		}
		keep(marker);
		return true;
	}

	/** {@link #retire(Object, Recorder)} recording with {@code cuEventRecord} itself. */
	boolean retire(S stream) {
		return retire(stream, (target, marker) -> this.ops.record(marker, target));
	}

	/**
	 * Covers the work enqueued on {@code stream} so far, which is about to begin or join a capture: the
	 * drain records nothing on a capturing stream, so it waits for this marker instead (like a retired
	 * stream's). The caller holds the stream's lock and has entered the backend.
	 * @return the {@code CUresult} of the record; on a failure nothing is kept
	 * @throws GpuException when the marker cannot be created
	 */
	int cover(S stream) {
		retiredDone();
		E marker = this.ops.createEvent();
		int recorded = this.ops.record(marker, stream);
		if (recorded != CudaErrors.SUCCESS) {
			this.ops.destroy(marker);
			return recorded;
		}
		keep(marker);
		return CudaErrors.SUCCESS;
	}

	private void keep(E marker) {
		synchronized (this.retired) {
			this.retired.add(marker);
		}
	}

	/** Destroys the retired markers whose work is done (or failed); whether none is left. */
	private boolean retiredDone() {
		synchronized (this.retired) {
			// A drain and a retiring stream may both be here: the one that waited for the lock may be on
			// another carrier now.
			this.afterWait.run();
			this.retired.removeIf((marker) -> {
				if (this.ops.query(marker) == CudaErrors.NOT_READY) {
					return false;
				}
				this.ops.destroy(marker);
				return true;
			});
			return this.retired.isEmpty();
		}
	}

	/**
	 * Destroys the retired markers left, at the backend's close ({@code cuEventDestroy} of an event
	 * whose work still runs returns at once; the driver releases it when the work ends).
	 */
	void destroyAll() {
		synchronized (this.retired) {
			for (E marker : this.retired) {
				this.ops.destroy(marker);
			}
			this.retired.clear();
		}
	}

}
