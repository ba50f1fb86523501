package dev.gpucompute.internal.core;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.graph.GraphCaptureException.Kind;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The graph captures in progress on one context, and the checks every room makes against them: what
 * a capture may record, and what it refuses ({@link GraphCaptureException}), the same on every backend.
 *
 * <p>A capture belongs to the thread that began it. A refused operation of that thread ends and
 * discards its capture before the exception is thrown, so that its streams are usable at once; a
 * refused operation of another thread (work on a stream someone else captures) leaves the capture
 * alone.
 *
 * <p>Cost outside captures: {@link #any()} is one plain field read, which the launch path makes once;
 * everything else runs only while some capture is in progress on the context. The count is written
 * under this object's lock and read without it: a thread always sees its own captures, and another
 * thread that misses one for a moment only misses the check for work on a stream it does not own.
 */
public final class Captures {

	private final ThreadLocal<Capture> current = new ThreadLocal<>();

	private final Map<NativeCapture, Capture> byNative = new ConcurrentHashMap<>();

	/** Captures in progress; written under this object's lock, read plainly by {@link #any()}. */
	private int inProgress;

	/** Whether any capture is in progress on this context (a hint for the calling thread; exact for its own). */
	public boolean any() {
		return this.inProgress != 0;
	}

	/**
	 * Registers a capture the backend has begun for the calling thread.
	 * @param name the graph's name
	 */
	public Capture begin(String name, NativeCapture capture) {
		Capture started = new Capture(this, name, Thread.currentThread(), capture);
		synchronized (this) {
			this.byNative.put(capture, started);
			this.inProgress++;
		}
		this.current.set(started);
		return started;
	}

	/** Called once by a capture that is over. */
	void ended(Capture capture) {
		synchronized (this) {
			if (this.byNative.remove(capture.nativeCapture()) != null) {
				this.inProgress--;
			}
		}
		if (this.current.get() == capture) {
			this.current.remove();
		}
	}

	/** The capture the calling thread runs, or {@code null}. */
	public @Nullable Capture ofThread() {
		Capture capture = this.current.get();
		if (capture != null && !capture.isActive()) {
			this.current.remove();
			return null;
		}
		return capture;
	}

	/** The capture {@code stream} takes part in, or {@code null}. */
	public @Nullable Capture of(NativeStream stream) {
		NativeCapture capture = stream.capture();
		return (capture != null) ? this.byNative.get(capture) : null;
	}

	/** The captures in progress (close abandons them). */
	public List<Capture> active() {
		return List.copyOf(this.byNative.values());
	}

	// ---- checks ------------------------------------------------------------------------------------

	/**
	 * Checks work the calling thread enqueues on {@code stream}.
	 * @param operation the work, in words ("launch of kernel 'saxpy'")
	 * @return the thread's capture when the stream takes part in it (the work is recorded), or
	 * {@code null} when no capture is involved (the work runs)
	 * @throws GraphCaptureException (kind {@code FOREIGN_STREAM}) when the thread captures and the
	 * stream is not part of its capture, or the stream is part of another thread's capture
	 */
	public @Nullable Capture forWork(NativeStream stream, String operation) {
		Capture mine = ofThread();
		NativeCapture theirs = stream.capture();
		if (mine == null && theirs == null) {
			return null;
		}
		if (mine != null && theirs == mine.nativeCapture()) {
			return mine;
		}
		if (mine != null) {
			throw refuse(mine, Kind.FOREIGN_STREAM, operation, operation + " on stream " + stream.name()
					+ " is not allowed while " + mine + ": stream " + stream.name() + " is not part of the capture. "
					+ "Issue the work on stream " + mine.originName() + " (the current stream inside the capture), or "
					+ "let stream " + stream.name() + " join the capture first (" + stream.name() + ".waitFor(capture "
					+ "stream)) and join it back before end() (capture stream.waitFor(" + stream.name() + "))");
		}
		throw foreign(stream, operation);
	}

	/**
	 * Checks a host-side wait of the calling thread on {@code stream}'s work ({@code null}: on the
	 * whole device, or on something that is not a stream).
	 * @throws GraphCaptureException (kind {@code HOST_WAIT}) when the thread captures, or the stream
	 * takes part in a capture
	 */
	public void checkHostWait(@Nullable NativeStream stream, String operation) {
		Capture mine = ofThread();
		if (mine != null) {
			throw refuse(mine, Kind.HOST_WAIT, operation, operation + " is a host-side wait, which is not allowed while "
					+ mine + ": captured work does not run until the graph is replayed. Wait after the capture has "
					+ "ended, for the replay (GpuGraph.replay(stream) returns a future; or synchronize the stream the "
					+ "graph was launched on)");
		}
		NativeCapture theirs = (stream != null) ? stream.capture() : null;
		if (theirs != null && stream != null) {
			Capture capture = this.byNative.get(theirs);
			throw new GraphCaptureException(Kind.HOST_WAIT, operation, operation + " of stream " + stream.name()
					+ " is a host-side wait on work that is being captured, not run"
					+ ((capture != null) ? " (" + capture + ")" : "") + ": wait for a replay of the graph instead");
		}
	}

	/**
	 * Checks an operation the thread that captures may not make at all (an allocation, a free, a
	 * kernel load).
	 * @param instead what to do instead, a sentence
	 * @throws GraphCaptureException of {@code kind} when the calling thread captures
	 */
	public void checkNotCapturing(Kind kind, String operation, String instead) {
		Capture mine = ofThread();
		if (mine != null) {
			throw refuse(mine, kind, operation, operation + " is not allowed while " + mine + ": " + instead);
		}
	}

	/**
	 * Checks an allocation or a free on {@code stream}: refused while the calling thread captures, or
	 * when the stream takes part in a capture.
	 */
	public void checkAllocation(NativeStream stream, String operation) {
		checkNotCapturing(Kind.ALLOCATION, operation, "allocate buffers before the capture begins and close them "
				+ "after it ends; a graph reads and writes the same buffers at every replay");
		if (stream != null && stream.capture() != null) {
			throw foreign(stream, operation);
		}
	}

	/** Refuses a copy that is staged on the host (from or into a Java array or {@code ByteBuffer}) in {@code capture}. */
	public GraphCaptureException stagedCopy(Capture capture, String operation) {
		return refuse(capture, Kind.STAGED_COPY, operation, operation + " cannot be recorded by the " + capture
				+ ": copies from or into Java arrays and ByteBuffers are staged on the host in steps, which a replay "
				+ "cannot repeat. Copy through a HostBuffer (launcher.allocateHost(bytes), allocated before the capture; "
				+ "put the data into it between replays) instead");
	}

	/**
	 * Refuses a wait inside {@code capture} for work outside it: an event recorded outside the capture,
	 * or the work of a stream that is not part of it.
	 */
	public GraphCaptureException outsideDependency(Capture capture, String operation, String what) {
		return refuse(capture, Kind.OUTSIDE_DEPENDENCY, operation, operation + " would make the " + capture + " wait for "
				+ what + ", which is outside the capture. Order that work before the capture begins (make the capture's "
				+ "stream wait for it first)");
	}

	/**
	 * Refuses a default stream joining {@code capture}. On CUDA both default streams synchronise with the
	 * legacy default stream, so any work another thread puts there while the capture is open would break
	 * it (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); the same reason {@code beginCapture} refuses them.
	 */
	public GraphCaptureException defaultStreamJoin(Capture capture, String operation, NativeStream stream) {
		return refuse(capture, Kind.DEFAULT_STREAM, operation, operation + " would make the default stream "
				+ stream.name() + " join the " + capture + ". A default stream cannot take part in a capture: "
				+ "on CUDA it is a blocking stream, so other threads' work on the legacy default stream would break "
				+ "the capture. Lease a pooled stream (context.streams().acquire()) for the branch");
	}

	/**
	 * Refuses the first use of a device buffer on {@code target}, a stream outside any capture, while
	 * the buffer's owning stream {@code owner} takes part in {@code capture}: ordering {@code target}
	 * after the owner would record a marker in the capture and make {@code target} join it, so the
	 * caller's later work would be captured instead of run.
	 */
	public GraphCaptureException ownerCaptured(Capture capture, NativeStream target, NativeStream owner, long bytes) {
		String operation = "The first use of a device buffer of " + bytes + " bytes on stream " + target.name();
		return refuse(capture, Kind.FOREIGN_STREAM, operation, operation + " would order that stream after the buffer's "
				+ "owning stream " + owner.name() + ", which takes part in the " + capture + ": the stream would join "
				+ "that capture. Use the buffer on " + target.name() + " before the capture begins or after it ends");
	}

	/** Refuses a stream of a peer context (another device) joining {@code capture}, a capture of this context. */
	public GraphCaptureException crossDeviceJoin(Capture capture, String operation) {
		return refuse(capture, Kind.FOREIGN_STREAM, operation, operation + " would make a stream of another device join "
				+ "the " + capture + ": a capture records the work of one device. Order the devices' work before the "
				+ "capture begins or after it ends");
	}

	/** Refuses the use of an event whose latest record was made inside a capture, after or outside it. */
	public GraphCaptureException capturedEvent(String operation, Capture recordedIn) {
		String where = (recordedIn != null && recordedIn.isActive()) ? "inside the " + recordedIn + ", which is still "
				+ "in progress" : "inside a capture";
		GraphCaptureException ex = new GraphCaptureException(Kind.OUTSIDE_DEPENDENCY, operation, operation
				+ " uses an event last recorded " + where + ": it marks a point of the graph, not of a stream's work. "
				+ "Record the event again outside a capture, or wait for a replay of the graph");
		Capture mine = ofThread();
		if (mine != null) {
			mine.fail(ex);
		}
		return ex;
	}

	/**
	 * Builds a refusal of {@code capture}'s own thread and, when the calling thread is that thread,
	 * ends and discards the capture first.
	 */
	public GraphCaptureException refuse(Capture capture, Kind kind, String operation, String message) {
		boolean own = capture.thread() == Thread.currentThread();
		GraphCaptureException ex = new GraphCaptureException(kind, operation, message
				+ (own ? ". The capture has been ended and discarded; its stream and lease are usable again" : ""));
		if (own) {
			capture.fail(ex);
		}
		return ex;
	}

	private GraphCaptureException foreign(NativeStream stream, String operation) {
		Capture capture = of(stream);
		String who = (capture != null) ? capture.toString() : "a capture";
		return new GraphCaptureException(Kind.FOREIGN_STREAM, operation, operation + " on stream " + stream.name()
				+ " from thread '" + Thread.currentThread().getName() + "' is not allowed: the stream takes part in " + who
				+ ". Only the thread that captures may use a stream while it is captured");
	}

}
