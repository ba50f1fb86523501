package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.cuda.CudaCompletionsTests.FakeOps;

/**
 * The backend's drain against the fake events of {@link CudaCompletionsTests}: what it waits for
 * before the context's close abandons the completions still pending and frees the host blocks. A
 * stream the pool evicted while a download on it still ran is waited for like a live one.
 */
class DrainMarkersTests {

	private final FakeOps ops = new FakeOps();

	private final CudaCompletions<String, FakeOps.Event> completions = new CudaCompletions<>(this.ops, 0);

	private final DrainMarkers<String, FakeOps.Event> markers = new DrainMarkers<>(this.ops, () -> {
	});

	/** The streams the backend lists, as {@code CudaStreams} does: the legacy default stream and the created ones. */
	private final Set<String> live = ConcurrentHashMap.newKeySet();

	private final ExecutorService closer = Executors.newSingleThreadExecutor();

	@AfterEach
	void close() throws InterruptedException {
		this.closer.shutdownNow();
		this.closer.awaitTermination(10, TimeUnit.SECONDS);
		this.completions.close();
		this.markers.destroyAll();
	}

	/** {@code CudaDeviceBackend.awaitIdle}: the markers of every stream, then the callbacks of their work. */
	private boolean awaitIdle(long timeoutNanos) {
		long deadline = System.nanoTime() + timeoutNanos;
		return this.markers.awaitIdle(List.copyOf(this.live), (stream, marker) -> this.ops.record(marker, stream),
				timeoutNanos) && this.completions.flush(deadline);
	}

	/** {@code CudaStream.destroy}: retires the stream, then the backend forgets it. */
	private void destroy(String stream) {
		assertThat(this.markers.retire(stream)).as("work covered").isTrue();
		this.live.remove(stream);
	}

	/** A page-locked block a device-to-host copy writes until its stream's work is done. */
	static final class PinnedBlock {

		final AtomicBoolean written = new AtomicBoolean();

		volatile boolean freedWhileWritten;

		volatile boolean freed;

		void free() {
			this.freedWhileWritten = this.written.get();
			this.freed = true;
		}

	}

	@Test
	void closeWaitsForADownloadOnAStreamEvictedWhileItRanAndItsCompletionsComplete() throws Exception {
		this.live.add("legacy");
		this.live.add("pool-1");
		// A download in two chunks on pool-1: the device writes the block, each chunk's completion is queued.
		PinnedBlock block = new PinnedBlock();
		block.written.set(true);
		List<Object> outcomes = Collections.synchronizedList(new ArrayList<>());
		for (int chunk = 0; chunk < 2; chunk++) {
			this.ops.enqueue("pool-1");
			this.completions.whenDone("pool-1", outcomes::add);
		}
		// Its lease went back before the download ended; a caller of the other priority at the pool's
		// maximum gets the stream replaced: it is destroyed with the download still running.
		destroy("pool-1");

		// The context's close: the drain, then (ContextImpl.close) the completions still pending are
		// abandoned and, when the drain succeeded, the host blocks freed.
		List<Object> outcomesAtAnswer = Collections.synchronizedList(new ArrayList<>());
		Future<Boolean> closing = this.closer.submit(() -> {
			boolean idle = awaitIdle(TimeUnit.SECONDS.toNanos(10));
			outcomesAtAnswer.addAll(outcomes);
			if (idle) {
				block.free();
			}
			return idle;
		});
		// The drain polls the evicted stream's marker while the download runs.
		AtomicInteger drainQueries = this.ops.otherQueries.computeIfAbsent("pool-1", (key) -> new AtomicInteger());
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		while (drainQueries.get() < 3 && !closing.isDone() && System.nanoTime() - until < 0) {
			Thread.sleep(1);
		}
		assertThat(closing.isDone()).as("close answered while the evicted stream's download ran").isFalse();
		assertThat(drainQueries.get()).as("the drain polls the evicted stream's marker").isGreaterThanOrEqualTo(3);

		block.written.set(false);
		this.ops.finish("pool-1");

		assertThat(closing.get(10, TimeUnit.SECONDS)).as("drained").isTrue();
		assertThat(block.freed).isTrue();
		assertThat(block.freedWhileWritten).as("block freed while the copy wrote it").isFalse();
		assertThat(outcomesAtAnswer).as("completions run before the drain answered: none left for close to abandon")
			.containsExactly(null, null);
	}

	@Test
	void aDrainWithNoTimeLeftLooksAtEachMarkerOnceAndAnswersIdleWhenAllAreDone() {
		this.live.add("legacy");
		this.live.add("pool-1");
		this.ops.enqueue("pool-2");
		destroy("pool-2");
		this.ops.finish("pool-2");
		assertThat(this.markers.awaitIdle(List.copyOf(this.live), (stream, marker) -> this.ops.record(marker, stream), 0))
			.isTrue();
		this.ops.enqueue("pool-1");
		assertThat(this.markers.awaitIdle(List.copyOf(this.live), (stream, marker) -> this.ops.record(marker, stream), 0))
			.as("work in flight, no time left").isFalse();
		assertThat(this.ops.otherPauses).as("no time left: no pause").isEmpty();
	}

	@Test
	void aStreamDestroyedMeanwhileIsNotRecordedOnAndItsRetiredMarkerCounts() {
		this.live.add("pool-1");
		this.ops.enqueue("pool-1");
		// The drain listed pool-1, which then retired and was destroyed before the drain recorded on it.
		this.markers.retire("pool-1");
		assertThat(this.markers.awaitIdle(List.of("pool-1"), (stream, marker) -> DrainMarkers.DESTROYED, 0))
			.as("the retired marker still waits for the work").isFalse();
		this.ops.finish("pool-1");
		assertThat(this.markers.awaitIdle(List.of("pool-1"), (stream, marker) -> DrainMarkers.DESTROYED, 0)).isTrue();
	}

	@Test
	void retiredMarkersAreDestroyedOnceTheirWorkIsDone() {
		for (int i = 0; i < 100; i++) {
			String stream = "pool-" + i;
			this.ops.enqueue(stream);
			this.markers.retire(stream);
			this.ops.finish(stream);
		}
		// Each retirement destroys the markers whose work is done: one is left, the last one's.
		assertThat(this.ops.created.get() - this.ops.destroyed.get()).isEqualTo(1);
		assertThat(this.markers.awaitIdle(List.of(), (stream, marker) -> this.ops.record(marker, stream), 0)).isTrue();
		assertThat(this.ops.created.get()).isEqualTo(this.ops.destroyed.get());
	}

	@Test
	void aStreamThatCannotBeMarkedMustBeWaitedForUnlessTheContextFailed() {
		this.ops.recordResult = CudaErrors.INVALID_HANDLE;
		assertThat(this.markers.retire("pool-1")).as("not covered: the caller synchronizes the stream").isFalse();
		this.ops.recordResult = 700; // CUDA_ERROR_ILLEGAL_ADDRESS, sticky: nothing runs any more
		assertThat(this.markers.retire("pool-2")).as("over for good").isTrue();
		assertThat(this.ops.created.get()).as("no marker kept").isEqualTo(this.ops.destroyed.get());
	}

	@Test
	void workEnqueuedBeforeACaptureBeganIsWaitedForThroughItsMarker() {
		this.live.add("legacy");
		this.live.add("pool-1");
		this.ops.enqueue("pool-1");
		// The capture begins on pool-1: its work so far is covered first, then the drain records nothing there.
		assertThat(this.markers.cover("pool-1")).isEqualTo(CudaErrors.SUCCESS);
		DrainMarkers.Recorder<String, FakeOps.Event> capturing = (stream, marker) -> stream.equals("pool-1")
				? DrainMarkers.CAPTURING : this.ops.record(marker, stream);
		assertThat(this.markers.awaitIdle(List.copyOf(this.live), capturing, 0))
			.as("the work from before the capture still runs").isFalse();
		this.ops.finish("pool-1");
		assertThat(this.markers.awaitIdle(List.copyOf(this.live), capturing, 0)).isTrue();
		assertThat(this.ops.created.get()).as("markers destroyed once done").isEqualTo(this.ops.destroyed.get());
	}

	@Test
	void aStreamThatCapturesIsNotCoveredByAMarkerWhenItRetires() {
		this.ops.enqueue("pool-1");
		assertThat(this.markers.retire("pool-1", (stream, marker) -> DrainMarkers.CAPTURING))
			.as("a marker there would be recorded into the capture").isFalse();
		assertThat(this.ops.created.get()).as("no marker kept").isEqualTo(this.ops.destroyed.get());
	}

	@Test
	void aMarkerThatCannotBeRecordedMeansIdleOnlyWhenTheContextIsLost() {
		this.live.add("legacy");
		this.live.add("pool-1");
		this.ops.recordResult = CudaErrors.INVALID_HANDLE;
		int[] failure = new int[1];
		assertThat(this.markers.awaitIdle(List.copyOf(this.live), (stream, marker) -> this.ops.record(marker, stream), 0,
				failure)).as("work not waited for").isFalse();
		assertThat(failure[0]).isEqualTo(CudaErrors.INVALID_HANDLE);
		this.ops.recordResult = 700; // CUDA_ERROR_ILLEGAL_ADDRESS, sticky: nothing runs any more
		assertThat(this.markers.awaitIdle(List.copyOf(this.live), (stream, marker) -> this.ops.record(marker, stream), 0,
				failure)).isTrue();
		assertThat(failure[0]).isEqualTo(700);
		assertThat(this.ops.created.get()).isEqualTo(this.ops.destroyed.get());
	}

	@Test
	void aFailureAMarkerReportsIsTold() {
		this.live.add("pool-1");
		this.ops.enqueue("pool-1");
		this.ops.failures.put("pool-1", 700);
		int[] failure = new int[1];
		assertThat(this.markers.awaitIdle(List.copyOf(this.live), (stream, marker) -> this.ops.record(marker, stream), 0,
				failure)).as("nothing runs after a sticky failure").isTrue();
		assertThat(failure[0]).isEqualTo(700);
	}

}
