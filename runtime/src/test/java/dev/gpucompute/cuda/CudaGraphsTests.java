package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeGraphExec;
import jcuda.driver.CUevent;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.CUstreamCaptureStatus;

/**
 * The CUDA graph room against a fake driver that answers as the driver's documentation says: capture
 * bookkeeping (which streams are in a capture, and that every end clears them, also when the driver
 * refuses), the end of a capture with streams not joined back (joined, ended for good, discarded),
 * an invalidated capture, an end the driver refuses with the capture still open (the streams are
 * taken out of use), the end on another thread than the begin (the relaxed mode allows it, the
 * thread-local one answers {@code CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD}), device synchronisations
 * while a capture is open, the ends at close, the update's fall-back when the driver refuses or lacks
 * {@code cuGraphExecUpdate_v2}, and the order and idempotence of releases, before and after close.
 */
class CudaGraphsTests {

	/** A driver whose answers the test sets; it logs the calls and counts what is alive. */
	static final class FakeDriver implements CudaGraphs.Driver {

		final List<String> calls = Collections.synchronizedList(new ArrayList<>());

		/** The streams the driver captures now, by name (a test may add a member it still holds). */
		final Set<String> capturing = ConcurrentHashMap.newKeySet();

		/** Per origin: the thread that began its capture, and the mode. */
		final Map<String, Thread> beganOn = new ConcurrentHashMap<>();

		final Map<String, Integer> modes = new ConcurrentHashMap<>();

		/** Whether each begin was called with the stream's lock held (a drain records its marker under it). */
		final List<Boolean> beganUnderStreamLock = Collections.synchronizedList(new ArrayList<>());

		/** Results of the next cuStreamEndCapture calls; SUCCESS with a graph when empty. */
		final Deque<Integer> endResults = new ArrayDeque<>();

		int beginResult = CUresult.CUDA_SUCCESS;

		int updateResult = CUresult.CUDA_SUCCESS;

		int updateWhy;

		int liveGraphs;

		int liveExecs;

		long nodes = 3;

		@Override
		public int beginCapture(CudaStream stream, int mode) {
			this.calls.add("begin " + stream.name());
			this.beganUnderStreamLock.add(Thread.holdsLock(stream));
			if (this.beginResult == CUresult.CUDA_SUCCESS) {
				this.capturing.add(stream.name());
				this.beganOn.put(stream.name(), Thread.currentThread());
				this.modes.put(stream.name(), mode);
			}
			return this.beginResult;
		}

		/**
		 * As cuStreamEndCapture's documentation says: unless the capture was begun in the relaxed mode, an
		 * end from another thread than the begin fails with CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD and the
		 * capture stays open; otherwise the test's result, which ends the capture unless it is one that
		 * leaves it open (UNJOINED, WRONG_THREAD).
		 */
		@Override
		public CudaGraphs.Ended endCapture(CudaStream stream) {
			this.calls.add("end " + stream.name());
			Integer mode = this.modes.get(stream.name());
			if (mode != null && mode != CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
					&& this.beganOn.get(stream.name()) != Thread.currentThread()) {
				return new CudaGraphs.Ended(CUresult.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, null);
			}
			int result = this.endResults.isEmpty() ? CUresult.CUDA_SUCCESS : this.endResults.poll();
			if (result != CUresult.CUDA_ERROR_STREAM_CAPTURE_UNJOINED
					&& result != CUresult.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) {
				this.capturing.remove(stream.name());
			}
			boolean graph = result == CUresult.CUDA_SUCCESS;
			if (graph) {
				this.liveGraphs++;
			}
			return new CudaGraphs.Ended(result, graph ? new CudaGraphs.GraphHandle() : null);
		}

		@Override
		public int captureStatus(CudaStream stream, int[] status) {
			this.calls.add("is capturing " + stream.name());
			status[0] = this.capturing.contains(stream.name()) ? CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE
					: CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE;
			return CUresult.CUDA_SUCCESS;
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

	/** A backend that logs into the driver's list what reaches it: quiet entries and the markers before captures. */
	static final class FakeBackend implements CudaGraphs.Backend {

		private final List<String> calls;

		volatile boolean closed;

		int entered;

		FakeBackend(List<String> calls) {
			this.calls = calls;
		}

		@Override
		public void enter() {
			this.entered++;
		}

		/** The threads that entered quietly, in order. */
		final List<Thread> enteredQuietlyOn = Collections.synchronizedList(new ArrayList<>());

		@Override
		public void enterQuietly() {
			this.calls.add("enter quietly");
			this.enteredQuietlyOn.add(Thread.currentThread());
		}

		@Override
		public int coverBeforeCapture(CudaStream stream) {
			this.calls.add("cover " + stream.name());
			return CUresult.CUDA_SUCCESS;
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

	private final FakeBackend backend = new FakeBackend(this.driver.calls);

	private final CudaGraphs graphs = new CudaGraphs(this.driver, this.backend);

	private final ExecutorService threadA = Executors.newSingleThreadExecutor((task) -> new Thread(task, "thread-a"));

	private final ExecutorService threadB = Executors.newSingleThreadExecutor((task) -> new Thread(task, "thread-b"));

	@AfterEach
	void stopThreads() throws InterruptedException {
		this.threadA.shutdownNow();
		this.threadB.shutdownNow();
		this.threadA.awaitTermination(10, TimeUnit.SECONDS);
		this.threadB.awaitTermination(10, TimeUnit.SECONDS);
	}

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
		assertThat(this.driver.calls).containsExactly("cover pool-1", "begin pool-1", "end pool-1", "instantiate",
				"enter quietly", "destroy graph", "launch pool-1", "enter quietly", "destroy exec");
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
		assertThat(this.driver.calls).containsExactly("cover pool-1", "begin pool-1", "end pool-1", "enter quietly",
				"join pool-2 into pool-1", "end pool-1", "destroy graph", "is capturing pool-1", "is capturing pool-2");
		assertThat(origin.isReusable()).isTrue();
		assertThat(side.isReusable()).isTrue();
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
		assertThat(this.driver.calls).containsExactly("cover pool-1", "begin pool-1", "enter quietly",
				"join pool-2 into pool-1", "end pool-1", "destroy graph", "is capturing pool-1", "is capturing pool-2");
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
	void aDefaultStreamWaitingForAnEventRecordedInACaptureIsRefusedBeforeTheDriver() {
		CudaStream origin = stream("pool-1");
		CudaGraphs.Capture capture = (CudaGraphs.Capture) this.graphs.begin(origin);
		CudaEvent fork = new CudaEvent(null, new CUevent(), false);
		fork.recordedIn = capture;
		for (CudaStream.Kind kind : new CudaStream.Kind[] { CudaStream.Kind.LEGACY, CudaStream.Kind.PER_THREAD }) {
			CudaStream byDefault = new CudaStream(null, new CUstream(), "default-" + kind, kind, 0);
			assertThatThrownBy(() -> byDefault.waitEvent(fork)).isInstanceOf(GpuException.class)
				.hasMessageContaining("is a default stream, which cannot join a capture");
			assertThat(byDefault.capture()).isNull();
		}
		assertThat(this.driver.calls).containsExactly("cover pool-1", "begin pool-1");
		capture.end();
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
		assertThat(origin.recordForDrain(new jcuda.driver.CUevent())).isEqualTo(DrainMarkers.CAPTURING);
		assertThat(origin.recordUnlessCapturing(new jcuda.driver.CUevent())).as("the marker of a retiring stream")
			.isEqualTo(DrainMarkers.CAPTURING);
		assertThatThrownBy(origin::synchronize).isInstanceOf(GpuException.class)
			.hasMessageContaining("would invalidate the capture");
		assertThatThrownBy(() -> origin.whenDone((failure) -> {
		})).isInstanceOf(GpuException.class).hasMessageContaining("would invalidate the capture");
	}

	@Test
	void aCaptureBegunOnOneThreadIsEndedOnAnotherAndGivesItsGraph() throws Exception {
		// A virtual thread that parks during a capture may go on on another carrier: the end comes from
		// another OS thread, which only the relaxed mode allows.
		CudaStream origin = stream("pool-1");
		NativeCapture capture = this.threadA.submit(() -> this.graphs.begin(origin)).get();
		NativeGraph graph = this.threadB.submit(capture::end).get();
		assertThat(graph).isNotNull();
		assertThat(this.driver.modes).containsEntry("pool-1", CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED);
		assertThat(this.driver.capturing).as("the driver ended it").isEmpty();
		assertThat(origin.capture()).isNull();
		assertThat(origin.isReusable()).isTrue();
	}

	@Test
	void anEndTheDriverRefusesWithTheCaptureStillOpenTakesItsStreamsOutOfUse() {
		CudaStream origin = stream("pool-1");
		CudaStream side = stream("pool-2");
		CudaGraphs.Capture capture = (CudaGraphs.Capture) this.graphs.begin(origin);
		capture.joined(side);
		this.driver.endResults.add(CUresult.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
		this.driver.capturing.add("pool-2");

		assertThatThrownBy(capture::end).isInstanceOf(GpuException.class).hasMessageContaining("cuStreamEndCapture");
		assertThat(this.driver.calls).containsSubsequence("end pool-1", "is capturing pool-1", "is capturing pool-2");
		assertThat(origin.isReusable()).as("its pool must destroy it, not hand it out again").isFalse();
		assertThat(side.isReusable()).isFalse();
		assertThatThrownBy(origin::checkUsable).hasMessageContaining("Stream pool-1 is out of use")
			.hasMessageContaining("the driver still captures it");
		assertThat(origin.recordForDrain(new jcuda.driver.CUevent())).as("no drain marker into the open capture")
			.isEqualTo(DrainMarkers.CAPTURING);
		assertThat(this.graphs.anyOpen()).isFalse();
	}

	@Test
	void aStreamTheDriverStillCapturesAfterAnUnjoinedEndIsTakenOutOfUse() {
		CudaStream origin = stream("pool-1");
		CudaStream side = stream("pool-2");
		CudaGraphs.Capture capture = (CudaGraphs.Capture) this.graphs.begin(origin);
		capture.joined(side);
		this.driver.endResults.add(CUresult.CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
		this.driver.capturing.add("pool-2"); // the join and the second end did not let it go

		assertThatThrownBy(capture::end).isInstanceOf(GraphCaptureException.class);
		assertThat(origin.isReusable()).isTrue();
		assertThat(side.isReusable()).as("still captured by the driver").isFalse();
	}

	@Test
	void theMarkerBeforeACaptureIsRecordedAndTheCaptureBegunUnderTheStreamsLock() {
		CudaStream origin = stream("pool-1");
		this.graphs.begin(origin);
		assertThat(this.driver.calls).containsExactly("cover pool-1", "begin pool-1");
		assertThat(this.driver.beganUnderStreamLock).containsExactly(true);
	}

	@Test
	void whileAnotherThreadCapturesTheDeviceIsNotSynchronisedAsAWhole() throws Exception {
		AtomicInteger contextWide = new AtomicInteger();
		AtomicInteger withMarkers = new AtomicInteger();
		IntSupplier synchronizeContext = () -> {
			contextWide.incrementAndGet();
			return CUresult.CUDA_SUCCESS;
		};
		IntSupplier awaitMarkers = () -> {
			withMarkers.incrementAndGet();
			return CUresult.CUDA_SUCCESS;
		};
		this.graphs.synchronizeDevice(synchronizeContext, awaitMarkers);
		assertThat(contextWide).hasValue(1);

		NativeCapture capture = this.threadA.submit(() -> this.graphs.begin(stream("pool-1"))).get();
		this.graphs.synchronizeDevice(synchronizeContext, awaitMarkers);
		assertThat(contextWide).as("cuCtxSynchronize would invalidate the other thread's capture").hasValue(1);
		assertThat(withMarkers).hasValue(1);

		this.threadA.submit(capture::end).get();
		this.graphs.synchronizeDevice(synchronizeContext, awaitMarkers);
		assertThat(contextWide).hasValue(2);
		assertThat(withMarkers).hasValue(1);
	}

	@Test
	void noCaptureBeginsWhileTheDeviceIsSynchronisedAsAWhole() throws Exception {
		CountDownLatch inSynchronisation = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		Future<Integer> synchronisation = this.threadA.submit(() -> this.graphs.synchronizeDevice(() -> {
			inSynchronisation.countDown();
			try {
				release.await();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			return CUresult.CUDA_SUCCESS;
		}, () -> CUresult.CUDA_SUCCESS));
		assertThat(inSynchronisation.await(10, TimeUnit.SECONDS)).isTrue();
		Thread[] beginner = new Thread[1];
		Future<NativeCapture> begun = this.threadB.submit(() -> {
			beginner[0] = Thread.currentThread();
			return this.graphs.begin(stream("pool-1"));
		});
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while ((beginner[0] == null || beginner[0].getState() != Thread.State.WAITING) && System.nanoTime() - until < 0) {
			Thread.sleep(1);
		}
		assertThat(beginner[0].getState()).as("the begin waits for the synchronisation").isEqualTo(Thread.State.WAITING);
		assertThat(this.driver.calls).as("no capture began during cuCtxSynchronize").isEmpty();
		release.countDown();
		assertThat(synchronisation.get(10, TimeUnit.SECONDS)).isZero();
		assertThat(begun.get(10, TimeUnit.SECONDS)).isNotNull();
		assertThat(this.driver.calls).containsExactly("cover pool-1", "begin pool-1");
	}

	@Test
	void abortAllEndsEveryOpenCaptureAtTheDriverAndDiscardsWhatItRecorded() {
		CudaStream first = stream("pool-1");
		CudaStream joined = stream("pool-2");
		CudaStream second = stream("pool-3");
		CudaGraphs.Capture one = (CudaGraphs.Capture) this.graphs.begin(first);
		one.joined(joined);
		this.graphs.begin(second);
		this.driver.calls.clear();

		this.graphs.abortAll();

		assertThat(this.driver.capturing).as("nothing left capturing at the driver").isEmpty();
		assertThat(this.driver.calls).contains("join pool-2 into pool-1", "end pool-1", "end pool-3");
		assertThat(this.driver.liveGraphs).isZero();
		assertThat(this.graphs.anyOpen()).isFalse();
		assertThat(first.capture()).isNull();
		assertThat(joined.capture()).isNull();
		assertThat(second.capture()).isNull();
		assertThat(one.isActive()).isFalse();
	}

	@Test
	void noCaptureBeginsOnceTheCloseEndedTheOpenOnes() {
		// Between the close's abortAll and the destruction of the streams, a capture begun by another
		// thread would leave a stream the driver captures when it is destroyed.
		this.graphs.abortAll();
		assertThatThrownBy(() -> this.graphs.begin(stream("pool-1"))).isInstanceOf(ContextClosedException.class);
		assertThat(this.driver.calls).as("nothing reached the driver").isEmpty();
		assertThat(this.graphs.anyOpen()).isFalse();
	}

	@Test
	void aGraphOrInstantiationReleasedByAnotherThreadMakesTheContextCurrentThereFirst() throws Exception {
		NativeGraph graph = this.graphs.begin(stream("pool-1")).end();
		NativeGraphExec exec = graph.instantiate();
		this.driver.calls.clear();
		// The leak cleaner's thread has never used the context.
		this.threadB.submit(() -> {
			exec.destroy();
			graph.destroy();
		}).get();
		assertThat(this.driver.calls).containsExactly("enter quietly", "destroy exec", "enter quietly", "destroy graph");
		assertThat(this.backend.enteredQuietlyOn).allSatisfy((thread) -> assertThat(thread.getName()).isEqualTo("thread-b"));
	}

}
