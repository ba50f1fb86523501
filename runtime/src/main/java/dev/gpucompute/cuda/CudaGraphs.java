package dev.gpucompute.cuda;

import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuException;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeGraphExec;
import dev.gpucompute.spi.NativeStream;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUresult;

/**
 * The graph room of the CUDA backend: stream capture in CUDA's thread-local mode, instantiation,
 * launches, updates in place with the fall-back to a new instantiation, and the order of releases.
 * The driver is reached through {@link Driver}, so that the bookkeeping is tested with a fake.
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

		/** {@code cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)}. */
		int beginCapture(CudaStream stream);

		/** {@code cuStreamEndCapture}: its result, and the graph it returned (none when invalidated). */
		Ended endCapture(CudaStream stream);

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
	record Ended(int result, GraphHandle graph) {
	}

	/** What the room needs of its backend besides the driver. */
	interface Backend {

		/** Makes the context current on the calling thread and checks it is usable. */
		void enter();

		/** Whether the backend was closed (nothing may reach the driver then). */
		boolean isClosed();

		/** The backend's exception for a failed call, keeping its health up to date. */
		GpuException failure(int code, String call, CudaStream stream);

	}

	/** {@link Driver#update}'s answer when the driver has no {@code cuGraphExecUpdate_v2}. */
	static final int UPDATE_UNAVAILABLE = -2;

	private final Driver driver;

	private final Backend backend;

	/** Whether the missing update entry point was logged (once per backend). */
	private volatile boolean toldNoUpdate;

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

	/** Begins capturing {@code stream} in the thread-local mode. */
	NativeCapture begin(CudaStream stream) {
		if (stream.kind != CudaStream.Kind.CREATED) {
			throw new GpuException("Stream " + stream.name() + " is a default stream, which the runtime does not capture");
		}
		if (stream.capture != null) {
			throw new GpuException("Stream " + stream.name() + " is being captured already");
		}
		this.backend.enter();
		int result = this.driver.beginCapture(stream);
		if (result != CudaErrors.SUCCESS) {
			throw this.backend.failure(result, "cuStreamBeginCapture", stream);
		}
		Capture capture = new Capture(stream);
		stream.capture = capture;
		return capture;
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
		private synchronized List<CudaStream> close() {
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
				throw CudaGraphs.this.backend.failure(result, "cuStreamEndCapture", this.origin);
			}
			finally {
				for (CudaStream stream : streams) {
					stream.capture = null;
				}
			}
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
				for (CudaStream stream : streams) {
					stream.capture = null;
				}
			}
		}

		/** Joins every stream back into the origin and ends the capture, discarding whatever it returns. */
		private void finishQuietly(List<CudaStream> streams) {
			CudaGraphs.this.backend.enter();
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

		@Override
		public synchronized void destroy() {
			if (this.destroyed || CudaGraphs.this.backend.isClosed()) {
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

		@Override
		public synchronized void destroy() {
			if (this.destroyed) {
				return;
			}
			this.destroyed = true;
			if (CudaGraphs.this.backend.isClosed()) {
				return; // released with the context
			}
			int result = CudaGraphs.this.driver.destroyExec(this.handle);
			if (result != CudaErrors.SUCCESS) {
				logger.debug("cuGraphExecDestroy returned {}", CudaErrors.name(result));
			}
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
