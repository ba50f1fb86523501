package dev.gpucompute.cuda;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.IntSupplier;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeGraphExec;
import dev.gpucompute.spi.NativeStream;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUresult;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.CUstreamCaptureStatus;

/**
 * The graph room of the CUDA backend: stream capture in CUDA's relaxed mode, instantiation, launches,
 * updates in place with the fall-back to a new instantiation, and the order of releases. The driver
 * is reached through {@link Driver}, so that the bookkeeping is tested with a fake.
 *
 * <p>Why the relaxed mode ({@code CU_STREAM_CAPTURE_MODE_RELAXED}): a capture begun in the
 * thread-local or the global mode must be ended by the OS thread that began it
 * ({@code CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD} otherwise), and a virtual thread that parks during a
 * capture may go on on another carrier. Other threads are not disturbed by either mode: only a capture
 * begun in the global mode keeps other threads from potentially unsafe calls. What the thread-local
 * mode adds, the refusal of the capturing thread's own unsafe calls (a synchronous allocation, say),
 * the runtime makes itself, before the driver, for every call it makes ({@code Captures}).
 *
 * <p>Calls that conflict with a capture by their nature invalidate it in every mode, from any thread:
 * synchronising or querying a capturing stream, querying an event recorded in a capture, and
 * synchronising the whole context ({@code cuCtxSynchronize}) while any of its streams captures. So the
 * room counts its open captures: {@link #synchronizeDevice} waits with the drain's markers instead of
 * the context while one is open, and no capture begins while a context-wide synchronisation runs. A
 * stream's work from before it began or joined a capture is covered by a marker recorded then
 * ({@link Backend#coverBeforeCapture}), since the drain records nothing on a capturing stream.
 *
 * <p>CUDA's capture rules, as this room relies on them (CUDA driver API, "Stream Capture"): while a
 * stream captures, work enqueued on it is recorded; a stream that waits for an event recorded in the
 * capture joins it, and every joined stream must be joined back into the origin before
 * {@code cuStreamEndCapture}, which otherwise fails with {@code CUDA_ERROR_STREAM_CAPTURE_UNJOINED}; an
 * illegal call (synchronising or querying a capturing stream, querying an event recorded in a
 * capture, waiting inside the capture for an event recorded outside it) fails and invalidates the
 * capture, whose end then returns {@code CUDA_ERROR_STREAM_CAPTURE_INVALIDATED} and no graph; these
 * capture errors are not sticky, the context stays usable. The rooms above refuse such calls before
 * they reach the driver; this room maps what the driver still reports.
 */
final class CudaGraphs {

	private static final Logger logger = LoggerFactory.getLogger(CudaGraphs.class);

	/** The driver calls of graphs; each returns a {@code CUresult}. */
	interface Driver {

		/** {@code cuStreamBeginCapture(stream, mode)}, {@code mode} a {@code CUstreamCaptureMode}. */
		int beginCapture(CudaStream stream, int mode);

		/** {@code cuStreamEndCapture}: its result, and the graph it returned (none when invalidated). */
		Ended endCapture(CudaStream stream);

		/**
		 * {@code cuStreamIsCapturing}.
		 * @param status receives the {@code CUstreamCaptureStatus}
		 */
		int captureStatus(CudaStream stream, int[] status);

		/** {@code cuGraphGetNodes} for the count only. */
		int nodeCount(GraphHandle graph, long[] count);

		/** {@code cuGraphInstantiate(exec, graph, 0)}. */
		int instantiate(ExecHandle exec, GraphHandle graph);

		/** {@code cuGraphUpload}. */
		int upload(ExecHandle exec, CudaStream stream);

		/** {@code cuGraphLaunch}. */
		int launch(ExecHandle exec, CudaStream stream);

		/**
		 * {@code cuGraphExecUpdate_v2}; {@link CudaGraphs#UPDATE_UNAVAILABLE} when the driver lacks it.
		 * @param why receives the driver's reason when it refuses ({@code CUgraphExecUpdateResult})
		 */
		int update(ExecHandle exec, GraphHandle graph, int[] why);

		/** Why {@link #update} answers {@link CudaGraphs#UPDATE_UNAVAILABLE}, in words. */
		String updateUnavailable();

		int destroyGraph(GraphHandle graph);

		int destroyExec(ExecHandle exec);

		/** Orders {@code origin} after {@code member}'s work so far (an event recorded there, waited for). */
		int join(CudaStream origin, CudaStream member);

	}

	/**
	 * What {@code cuStreamEndCapture} returned.
	 *
	 * @param result its {@code CUresult}
	 * @param graph the captured graph, or {@code null} when it returned none
	 */
	record Ended(int result, @Nullable GraphHandle graph) {
	}

	/** What the room needs of its backend besides the driver. */
	interface Backend {

		/** Makes the context current on the calling thread and checks it is usable. */
		void enter();

		/**
		 * Makes the context current without the health check, for releases, which must reach the driver
		 * from any thread (the leak cleaner's too) and after a sticky failure.
		 * @throws dev.gpucompute.ContextClosedException when the backend is closed
		 */
		void enterQuietly();

		/**
		 * Records a marker on {@code stream} that the backend's drain and its capture-safe device
		 * synchronisation wait for, covering the work enqueued there before the stream begins or joins a
		 * capture (the drain records nothing on a capturing stream). The caller holds the stream's lock.
		 * @return the driver's result of the record
		 */
		int coverBeforeCapture(CudaStream stream);

		/** Whether the backend was closed (nothing may reach the driver then). */
		boolean isClosed();

		/** The backend's exception for a failed call, keeping its health up to date. */
		GpuException failure(int code, String call, @Nullable CudaStream stream);

	}

	/** {@link Driver#update}'s answer when the driver has no {@code cuGraphExecUpdate_v2}. */
	static final int UPDATE_UNAVAILABLE = -2;

	private final Driver driver;

	private final Backend backend;

	/** Whether the missing update entry point was logged (once per backend). */
	private volatile boolean toldNoUpdate;

	/**
	 * The captures open at the driver. Added to under {@link #deviceWide}'s write lock, so that a
	 * context-wide synchronisation, which holds its read lock, never runs while a capture is open.
	 */
	private final Set<Capture> open = ConcurrentHashMap.newKeySet();

	private final ReentrantReadWriteLock deviceWide = new ReentrantReadWriteLock();

	/**
	 * Set by {@link #abortAll} under the write lock of {@link #deviceWide}: no capture begins after the
	 * close ended the open ones (the close then destroys the streams, which must not capture).
	 */
	private boolean closing;

	CudaGraphs(Driver driver, Backend backend) {
		this.driver = driver;
		this.backend = backend;
	}

	/** A {@link CUgraph} whose handle Java can read (for the JNA call) and tell apart from none. */
	static final class GraphHandle extends CUgraph {

		long address() {
			return getNativePointer();
		}

	}

	/** A {@link CUgraphExec} whose handle Java can read. */
	static final class ExecHandle extends CUgraphExec {

		long address() {
			return getNativePointer();
		}

	}

	// ---- capture -----------------------------------------------------------------------------------

	/**
	 * Begins capturing {@code stream} in the relaxed mode. Under the stream's lock, which the drain
	 * takes to record its marker there: the drain sees the stream either before the capture (its marker
	 * runs) or capturing (it records nothing, and waits for the marker recorded here first). Under the
	 * write lock of {@link #deviceWide}: no context-wide synchronisation runs while the capture begins.
	 */
	NativeCapture begin(CudaStream stream) {
		if (stream.kind != CudaStream.Kind.CREATED) {
			throw new GpuException("Stream " + stream.name() + " is a default stream, which the runtime does not capture");
		}
		if (stream.capture != null) {
			throw new GpuException("Stream " + stream.name() + " is being captured already");
		}
		Lock exclusive = this.deviceWide.writeLock();
		exclusive.lock();
		try {
			synchronized (stream) {
				stream.checkUsable();
				if (stream.capture != null) {
					throw new GpuException("Stream " + stream.name() + " is being captured already");
				}
				if (this.closing) {
					throw new ContextClosedException("The CUDA backend is closing: no capture begins on stream " + stream.name());
				}
				// After the locks: a virtual thread that waited for them may go on on another carrier.
				this.backend.enter();
				int covered = this.backend.coverBeforeCapture(stream);
				if (covered != CudaErrors.SUCCESS) {
					throw this.backend.failure(covered, "cuEventRecord (the drain's marker before the capture)", stream);
				}
				int result = this.driver.beginCapture(stream, CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED);
				if (result != CudaErrors.SUCCESS) {
					throw this.backend.failure(result, "cuStreamBeginCapture", stream);
				}
				Capture capture = new Capture(stream);
				this.open.add(capture);
				stream.capture = capture;
				return capture;
			}
		}
		finally {
			exclusive.unlock();
		}
	}

	/**
	 * A synchronisation of the whole device: {@code contextWide} ({@code cuCtxSynchronize}) when no
	 * capture is open, holding the read lock of {@link #deviceWide} so that none begins meanwhile;
	 * otherwise {@code captureSafe}, which waits with the drain's markers on the streams that do not
	 * capture (synchronising the context while one of its streams captures would invalidate that
	 * capture, whichever thread owns it).
	 * @return the {@code CUresult} of the wait
	 */
	int synchronizeDevice(IntSupplier contextWide, IntSupplier captureSafe) {
		Lock shared = this.deviceWide.readLock();
		shared.lock();
		try {
			if (this.open.isEmpty()) {
				return contextWide.getAsInt();
			}
		}
		finally {
			shared.unlock();
		}
		return captureSafe.getAsInt();
	}

	/** Whether a capture is open at the driver. */
	boolean anyOpen() {
		return !this.open.isEmpty();
	}

	/**
	 * Ends every open capture at the driver and discards what it recorded, and refuses the captures
	 * that would begin later: the first step of the backend's close, before its context-wide
	 * synchronisation and before any stream is destroyed.
	 */
	void abortAll() {
		Lock exclusive = this.deviceWide.writeLock();
		exclusive.lock();
		try {
			this.closing = true;
			for (Capture capture : List.copyOf(this.open)) {
				capture.abort();
			}
		}
		finally {
			exclusive.unlock();
		}
	}

	/** A capture in progress: its origin and the streams that joined it, as the driver tracks them. */
	final class Capture implements NativeCapture {

		private final CudaStream origin;

		// guarded by this
		private final List<CudaStream> members = new ArrayList<>(2);

		private boolean over;

		Capture(CudaStream origin) {
			this.origin = origin;
			this.members.add(origin);
		}

		@Override
		public NativeStream origin() {
			return this.origin;
		}

		synchronized boolean isActive() {
			return !this.over;
		}

		/** {@code stream} waited for an event recorded in this capture: the driver made it join. */
		synchronized void joined(CudaStream stream) {
			if (!this.over && !this.members.contains(stream)) {
				this.members.add(stream);
				stream.capture = this;
			}
		}

		/** The streams of the capture, and marks it over; null when it was over already. */
		private synchronized @Nullable List<CudaStream> close() {
			if (this.over) {
				return null;
			}
			this.over = true;
			return List.copyOf(this.members);
		}

		@Override
		public NativeGraph end() {
			List<CudaStream> streams = close();
			if (streams == null) {
				throw new GpuException("The capture on stream " + this.origin.name() + " has ended already");
			}
			try {
				CudaGraphs.this.backend.enter();
				Ended ended = CudaGraphs.this.driver.endCapture(this.origin);
				int result = ended.result();
				if (result == CudaErrors.SUCCESS && ended.graph() != null) {
					return new Graph(ended.graph());
				}
				if (ended.graph() != null) {
					CudaGraphs.this.driver.destroyGraph(ended.graph());
				}
				if (result == CUresult.CUDA_ERROR_STREAM_CAPTURE_UNJOINED) {
					// The capture may still be open: join every stream back and end it for good.
					finishQuietly(streams);
					throw new GraphCaptureException(GraphCaptureException.Kind.UNJOINED, "end of the capture",
							"The capture on stream " + this.origin.name() + " cannot end: a stream joined it and its work "
									+ "was not joined back (CUDA_ERROR_STREAM_CAPTURE_UNJOINED). Make the capture's stream "
									+ "wait for every stream that joined it before end() (" + this.origin.name()
									+ ".waitFor(other)). The capture has been discarded");
				}
				if (result == CudaErrors.SUCCESS || result == CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
					throw new GraphCaptureException(GraphCaptureException.Kind.INVALIDATED, "end of the capture",
							"The capture on stream " + this.origin.name() + " was invalidated by the driver ("
									+ CudaErrors.name(result) + "): work the runtime did not see broke CUDA's capture "
									+ "rules (code using the stream's native handle, or a library that synchronises). "
									+ "The capture has been discarded");
				}
				// The driver may still hold the capture open: a stream it captures must never serve another holder.
				keepOutIfStillCapturing(streams);
				throw CudaGraphs.this.backend.failure(result, "cuStreamEndCapture", this.origin);
			}
			finally {
				left(streams);
			}
		}

		/** The capture is over for the room: its streams leave it, and it is no longer open. */
		private void left(List<CudaStream> streams) {
			for (CudaStream stream : streams) {
				stream.capture = null;
			}
			CudaGraphs.this.open.remove(this);
		}

		@Override
		public void abort() {
			List<CudaStream> streams = close();
			if (streams == null) {
				return;
			}
			try {
				if (!CudaGraphs.this.backend.isClosed()) {
					finishQuietly(streams);
				}
			}
			catch (RuntimeException ex) {
				logger.debug("Ending the discarded capture on stream {} failed", this.origin.name(), ex);
			}
			finally {
				left(streams);
			}
		}

		/**
		 * Joins every stream back into the origin and ends the capture, discarding whatever it returns;
		 * then checks that the driver let every stream go.
		 */
		private void finishQuietly(List<CudaStream> streams) {
			CudaGraphs.this.backend.enterQuietly();
			for (CudaStream stream : streams) {
				if (stream != this.origin) {
					CudaGraphs.this.driver.join(this.origin, stream);
				}
			}
			Ended ended = CudaGraphs.this.driver.endCapture(this.origin);
			if (ended.graph() != null) {
				CudaGraphs.this.driver.destroyGraph(ended.graph());
			}
			int result = ended.result();
			if (result != CudaErrors.SUCCESS) {
				logger.debug("cuStreamEndCapture of the discarded capture on stream {} returned {}", this.origin.name(),
						CudaErrors.name(result));
			}
			keepOutIfStillCapturing(streams);
		}

		/**
		 * Asks the driver whether each stream still captures ({@code cuStreamIsCapturing}) after an end
		 * that did not plainly succeed; one that does, or that cannot be asked, is marked lost: its work
		 * would be recorded into a capture nobody ends, so it is refused and never pooled again.
		 */
		private void keepOutIfStillCapturing(List<CudaStream> streams) {
			for (CudaStream stream : streams) {
				int[] status = { -1 };
				int result = CudaGraphs.this.driver.captureStatus(stream, status);
				if (result != CudaErrors.SUCCESS || status[0] != CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE) {
					String why = (result != CudaErrors.SUCCESS) ? "cuStreamIsCapturing returned " + CudaErrors.name(result)
							: "the driver still captures it after the end of the capture on stream " + this.origin.name();
					stream.markLost(why);
					logger.warn("Stream {} is taken out of use: {}", stream.name(), why);
				}
			}
		}

		@Override
		public String toString() {
			return "CudaCapture[" + this.origin.name() + "]";
		}

	}

	// ---- graphs ----------------------------------------------------------------------------------

	/** A captured graph, before instantiation. */
	final class Graph implements NativeGraph {

		final GraphHandle handle;

		private boolean destroyed;

		Graph(GraphHandle handle) {
			this.handle = handle;
		}

		@Override
		public int nodeCount() {
			CudaGraphs.this.backend.enter();
			long[] count = new long[1];
			int result = CudaGraphs.this.driver.nodeCount(this.handle, count);
			if (result != CudaErrors.SUCCESS) {
				throw CudaGraphs.this.backend.failure(result, "cuGraphGetNodes", null);
			}
			return (int) count[0];
		}

		@Override
		public NativeGraphExec instantiate() {
			CudaGraphs.this.backend.enter();
			ExecHandle exec = new ExecHandle();
			int result = CudaGraphs.this.driver.instantiate(exec, this.handle);
			if (result != CudaErrors.SUCCESS) {
				throw CudaGraphs.this.backend.failure(result, "cuGraphInstantiate", null);
			}
			return new Exec(exec);
		}

		/** {@inheritDoc} <p>From any thread, the leak cleaner's included: the context is made current first. */
		@Override
		public synchronized void destroy() {
			if (this.destroyed || !enteredForRelease()) {
				return;
			}
			this.destroyed = true;
			int result = CudaGraphs.this.driver.destroyGraph(this.handle);
			if (result != CudaErrors.SUCCESS) {
				logger.debug("cuGraphDestroy returned {}", CudaErrors.name(result));
			}
		}

	}

	/** An instantiated graph. */
	final class Exec implements NativeGraphExec {

		final ExecHandle handle;

		// guarded by this
		private boolean destroyed;

		Exec(ExecHandle handle) {
			this.handle = handle;
		}

		@Override
		public void launch(NativeStream stream) {
			CudaStream target = (CudaStream) stream;
			CudaGraphs.this.backend.enter();
			int result;
			synchronized (this) {
				if (this.destroyed) {
					throw new GpuException("The graph was destroyed");
				}
				result = CudaGraphs.this.driver.launch(this.handle, target);
			}
			if (result != CudaErrors.SUCCESS) {
				throw CudaGraphs.this.backend.failure(result, "cuGraphLaunch", target);
			}
		}

		@Override
		public void upload(NativeStream stream) {
			CudaStream target = (CudaStream) stream;
			CudaGraphs.this.backend.enter();
			int result = CudaGraphs.this.driver.upload(this.handle, target);
			if (result != CudaErrors.SUCCESS) {
				throw CudaGraphs.this.backend.failure(result, "cuGraphUpload", target);
			}
		}

		@Override
		public Update update(NativeGraph graph) {
			Graph next = (Graph) graph;
			CudaGraphs.this.backend.enter();
			int[] why = new int[1];
			int result = CudaGraphs.this.driver.update(this.handle, next.handle, why);
			if (result == CudaErrors.SUCCESS) {
				return Update.APPLIED;
			}
			if (result == UPDATE_UNAVAILABLE) {
				String reason = CudaGraphs.this.driver.updateUnavailable();
				if (!CudaGraphs.this.toldNoUpdate) {
					CudaGraphs.this.toldNoUpdate = true;
					logger.info("Graphs captured again are instantiated anew instead of updated in place: {}", reason);
				}
				return Update.refused(reason);
			}
			if (result == CUresult.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) {
				return Update.refused("the driver refused the update: " + updateResult(why[0]));
			}
			throw CudaGraphs.this.backend.failure(result, "cuGraphExecUpdate", null);
		}

		/** {@inheritDoc} <p>From any thread, the leak cleaner's included: the context is made current first. */
		@Override
		public synchronized void destroy() {
			if (this.destroyed) {
				return;
			}
			this.destroyed = true;
			if (!enteredForRelease()) {
				return; // released with the context
			}
			int result = CudaGraphs.this.driver.destroyExec(this.handle);
			if (result != CudaErrors.SUCCESS) {
				logger.debug("cuGraphExecDestroy returned {}", CudaErrors.name(result));
			}
		}

	}

	/**
	 * Makes the context current for a release from any thread (a graph's or an instantiation's destroy,
	 * also by the leak cleaner's thread, where it is not): false when the backend was closed, which
	 * released them with the context.
	 */
	private boolean enteredForRelease() {
		if (this.backend.isClosed()) {
			return false;
		}
		try {
			this.backend.enterQuietly();
			return true;
		}
		catch (ContextClosedException ex) {
			return false;
		}
	}

	/** {@code CUgraphExecUpdateResult} in words. */
	static String updateResult(int result) {
		return switch (result) {
			case 1 -> "CU_GRAPH_EXEC_UPDATE_ERROR";
			case 2 -> "the topology changed (CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED)";
			case 3 -> "an operation's type changed (CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED)";
			case 4 -> "a kernel changed (CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED)";
			case 5 -> "parameters changed in a way that cannot be updated (CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED)";
			case 6 -> "an operation cannot be updated (CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED)";
			case 7 -> "a kernel changed in an unsupported way (CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE)";
			case 8 -> "attributes changed (CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED)";
			default -> "CUgraphExecUpdateResult " + result;
		};
	}

}
