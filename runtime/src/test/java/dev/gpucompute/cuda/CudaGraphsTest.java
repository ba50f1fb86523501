package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuException;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeGraphExec;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;

/**
 * The CUDA graph room against a fake driver that answers as the driver's documentation says: capture
 * bookkeeping (which streams are in a capture, and that every end clears them, also when the driver
 * refuses), the end of a capture with streams not joined back (joined, ended for good, discarded),
 * an invalidated capture, the update's fall-back when the driver refuses or lacks
 * {@code cuGraphExecUpdate_v2}, and the order and idempotence of releases, before and after close.
 */
class CudaGraphsTest {

	/** A driver whose answers the test sets; it logs the calls and counts what is alive. */
	static final class FakeDriver implements CudaGraphs.Driver {

		final List<String> calls = Collections.synchronizedList(new ArrayList<>());

		/** Results of the next cuStreamEndCapture calls; SUCCESS with a graph when empty. */
		final Deque<Integer> endResults = new ArrayDeque<>();

		int beginResult = CUresult.CUDA_SUCCESS;

		int updateResult = CUresult.CUDA_SUCCESS;

		int updateWhy;

		int liveGraphs;

		int liveExecs;

		long nodes = 3;

		@Override
		public int beginCapture(CudaStream stream) {
			this.calls.add("begin " + stream.name());
			return this.beginResult;
		}

		@Override
		public CudaGraphs.Ended endCapture(CudaStream stream) {
			this.calls.add("end " + stream.name());
			int result = this.endResults.isEmpty() ? CUresult.CUDA_SUCCESS : this.endResults.poll();
			boolean graph = result == CUresult.CUDA_SUCCESS;
			if (graph) {
				this.liveGraphs++;
			}
			return new CudaGraphs.Ended(result, graph ? new CudaGraphs.GraphHandle() : null);
		}

		@Override
		public int nodeCount(CudaGraphs.GraphHandle graph, long[] count) {
			count[0] = this.nodes;
			return CUresult.CUDA_SUCCESS;
		}

		@Override
		public int instantiate(CudaGraphs.ExecHandle exec, CudaGraphs.GraphHandle graph) {
			this.calls.add("instantiate");
			this.liveExecs++;
			return CUresult.CUDA_SUCCESS;
		}

		@Override
		public int upload(CudaGraphs.ExecHandle exec, CudaStream stream) {
			this.calls.add("upload " + stream.name());
			return CUresult.CUDA_SUCCESS;
		}

		@Override
		public int launch(CudaGraphs.ExecHandle exec, CudaStream stream) {
			this.calls.add("launch " + stream.name());
			return CUresult.CUDA_SUCCESS;
		}

		@Override
		public int update(CudaGraphs.ExecHandle exec, CudaGraphs.GraphHandle graph, int[] why) {
			this.calls.add("update");
			why[0] = this.updateWhy;
			return this.updateResult;
		}

		@Override
		public String updateUnavailable() {
			return "no JNA on the class path to call cuGraphExecUpdate_v2";
		}

		@Override
		public int destroyGraph(CudaGraphs.GraphHandle graph) {
			this.calls.add("destroy graph");
			this.liveGraphs--;
			return CUresult.CUDA_SUCCESS;
		}

		@Override
		public int destroyExec(CudaGraphs.ExecHandle exec) {
			this.calls.add("destroy exec");
			this.liveExecs--;
			return CUresult.CUDA_SUCCESS;
		}

		@Override
		public int join(CudaStream origin, CudaStream member) {
			this.calls.add("join " + member.name() + " into " + origin.name());
			return CUresult.CUDA_SUCCESS;
		}

	}

	static final class FakeBackend implements CudaGraphs.Backend {

		volatile boolean closed;

		int entered;

		@Override
		public void enter() {
			this.entered++;
		}

		@Override
		public boolean isClosed() {
			return this.closed;
		}

		@Override
		public GpuException failure(int code, String call, CudaStream stream) {
			return CudaErrors.toException(code, call, null, (stream != null) ? stream.name() : null, 0);
		}

	}

	private final FakeDriver driver = new FakeDriver();

	private final FakeBackend backend = new FakeBackend();

	private final CudaGraphs graphs = new CudaGraphs(this.driver, this.backend);

	/** A stream the room can hold; no driver call reaches it (there is no backend behind it). */
	private static CudaStream stream(String name) {
		return new CudaStream(null, new CUstream(), name, CudaStream.Kind.CREATED, 0);
	}

	@Test
	void aCaptureMarksItsStreamsUntilItEndsAndItsGraphIsInstantiatedLaunchedAndReleased() {
		CudaStream origin = stream("pool-1");
		CudaStream side = stream("pool-2");
		NativeCapture capture = this.graphs.begin(origin);
		assertThat(origin.capture()).isSameAs(capture);
		((CudaGraphs.Capture) capture).joined(side);
		assertThat(side.capture()).isSameAs(capture);

		NativeGraph graph = capture.end();
		assertThat(origin.capture()).isNull();
		assertThat(side.capture()).as("a joined stream leaves the capture with it").isNull();
		assertThat(graph.nodeCount()).isEqualTo(3);
		NativeGraphExec exec = graph.instantiate();
		graph.destroy();
		graph.destroy();
		exec.launch(origin);
		exec.destroy();
		exec.destroy();
		assertThat(this.driver.calls).containsExactly("begin pool-1", "end pool-1", "instantiate", "destroy graph",
				"launch pool-1", "destroy exec");
		assertThat(this.driver.liveGraphs).isZero();
		assertThat(this.driver.liveExecs).isZero();
		assertThatThrownBy(() -> exec.launch(origin)).isInstanceOf(GpuException.class).hasMessageContaining("destroyed");
	}

	@Test
	void anUnjoinedStreamFailsTheEndWhichJoinsItBackEndsTheCaptureForGoodAndDiscardsIt() {
		CudaStream origin = stream("pool-1");
		CudaStream side = stream("pool-2");
		CudaGraphs.Capture capture = (CudaGraphs.Capture) this.graphs.begin(origin);
		capture.joined(side);
		this.driver.endResults.add(CUresult.CUDA_ERROR_STREAM_CAPTURE_UNJOINED);

		assertThatThrownBy(capture::end).isInstanceOfSatisfying(GraphCaptureException.class, (ex) -> {
			assertThat(ex.kind()).isEqualTo(GraphCaptureException.Kind.UNJOINED);
			assertThat(ex.getMessage()).contains("CUDA_ERROR_STREAM_CAPTURE_UNJOINED").contains("pool-1.waitFor(other)");
		});
		assertThat(this.driver.calls).containsExactly("begin pool-1", "end pool-1", "join pool-2 into pool-1", "end pool-1",
				"destroy graph");
		assertThat(this.driver.liveGraphs).isZero();
		assertThat(origin.capture()).isNull();
		assertThat(side.capture()).isNull();
		assertThatThrownBy(capture::end).isInstanceOf(GpuException.class).hasMessageContaining("ended already");
	}

	@Test
	void anInvalidatedCaptureEndsWithoutAGraphAndSaysWhy() {
		CudaStream origin = stream("pool-1");
		NativeCapture capture = this.graphs.begin(origin);
		this.driver.endResults.add(CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
		assertThatThrownBy(capture::end).isInstanceOfSatisfying(GraphCaptureException.class,
				(ex) -> assertThat(ex.kind()).isEqualTo(GraphCaptureException.Kind.INVALIDATED))
			.hasMessageContaining("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
		assertThat(origin.capture()).isNull();
		assertThat(this.driver.liveGraphs).isZero();
	}

	@Test
	void anAbortJoinsEveryStreamEndsTheCaptureAndDestroysWhatItReturnedOnce() {
		CudaStream origin = stream("pool-1");
		CudaStream side = stream("pool-2");
		CudaGraphs.Capture capture = (CudaGraphs.Capture) this.graphs.begin(origin);
		capture.joined(side);
		capture.abort();
		capture.abort();
		assertThat(this.driver.calls).containsExactly("begin pool-1", "join pool-2 into pool-1", "end pool-1",
				"destroy graph");
		assertThat(this.driver.liveGraphs).isZero();
		assertThat(origin.capture()).isNull();
		assertThat(side.capture()).isNull();
	}

	@Test
	void afterCloseAnAbortAndTheReleasesMakeNoDriverCall() {
		CudaStream origin = stream("pool-1");
		NativeGraph graph = this.graphs.begin(origin).end();
		NativeGraphExec exec = graph.instantiate();
		NativeCapture open = this.graphs.begin(stream("pool-3"));
		this.driver.calls.clear();
		this.backend.closed = true;
		open.abort();
		exec.destroy();
		graph.destroy();
		assertThat(this.driver.calls).as("the context released them with the device").isEmpty();
	}

	@Test
	void anUpdateTheDriverRefusesOrCannotMakeIsARefusalWithItsReason() {
		CudaStream origin = stream("pool-1");
		NativeGraphExec exec = this.graphs.begin(origin).end().instantiate();
		NativeGraph next = this.graphs.begin(origin).end();

		assertThat(exec.update(next)).isEqualTo(NativeGraphExec.Update.APPLIED);

		this.driver.updateResult = CUresult.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
		this.driver.updateWhy = 4;
		NativeGraphExec.Update refused = exec.update(next);
		assertThat(refused.applied()).isFalse();
		assertThat(refused.reason()).contains("CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED");

		this.driver.updateResult = CudaGraphs.UPDATE_UNAVAILABLE;
		assertThat(exec.update(next).reason()).as("the driver's reason").isEqualTo("no JNA on the class path to call "
				+ "cuGraphExecUpdate_v2");

		this.driver.updateResult = CUresult.CUDA_ERROR_INVALID_VALUE;
		assertThatThrownBy(() -> exec.update(next)).isInstanceOf(GpuException.class)
			.hasMessageContaining("cuGraphExecUpdate");
	}

	@Test
	void aDefaultStreamOrAStreamCapturedAlreadyIsRefusedAndAFailedBeginMarksNothing() {
		CudaStream legacy = new CudaStream(null, new CUstream(), "default-legacy", CudaStream.Kind.LEGACY, 0);
		assertThatThrownBy(() -> this.graphs.begin(legacy)).hasMessageContaining("default stream");
		CudaStream origin = stream("pool-1");
		this.graphs.begin(origin);
		assertThatThrownBy(() -> this.graphs.begin(origin)).hasMessageContaining("captured already");
		CudaStream other = stream("pool-2");
		this.driver.beginResult = CUresult.CUDA_ERROR_INVALID_VALUE;
		assertThatThrownBy(() -> this.graphs.begin(other)).isInstanceOf(GpuException.class)
			.hasMessageContaining("cuStreamBeginCapture");
		assertThat(other.capture()).isNull();
	}

	@Test
	void aCapturingStreamIsNeverQueriedSynchronisedOrWatchedThroughTheDriver() {
		CudaStream origin = stream("pool-1");
		this.graphs.begin(origin);
		// No backend stands behind the stream: reaching the driver would fail with a NullPointerException.
		assertThat(origin.query()).as("busy while captured").isFalse();
		assertThat(origin.recordForDrain(new jcuda.driver.CUevent())).isEqualTo(DrainMarkers.DESTROYED);
		assertThatThrownBy(origin::synchronize).isInstanceOf(GpuException.class)
			.hasMessageContaining("would invalidate the capture");
		assertThatThrownBy(() -> origin.whenDone((failure) -> {
		})).isInstanceOf(GpuException.class).hasMessageContaining("would invalidate the capture");
	}

}
