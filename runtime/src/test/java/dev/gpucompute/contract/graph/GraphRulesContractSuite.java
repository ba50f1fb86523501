package dev.gpucompute.contract.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.Kernel;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.StreamLease;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.GpuContractFixture;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCapture;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.graph.GraphCaptureException.Kind;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.KernelTiming;

/**
 * What a capture refuses, and who owns a graph, on every backend (docs/runtime.md, "Graphs"): each
 * refused operation raises {@link GraphCaptureException} of its kind naming the operation and what to do
 * instead; a refusal of the capturing thread ends and discards its capture, after which the stream and
 * its lease work as before, and nothing is left held. Graphs are closed by their holder, refuse replays
 * afterwards, are destroyed by their context's close and are seen by {@link LeakTracker}.
 */
public abstract class GraphRulesContractSuite extends GpuContractFixture {

	private GpuGraphs graphs() {
		return GpuGraphs.of(this.context);
	}

	/**
	 * Runs {@code refused} inside a capture on a fresh lease and checks the refusal: its kind, that the
	 * message names {@code operation} and {@code advice}, that the capture is over (its end says why),
	 * and that the stream works afterwards. The test checks that nothing is left held once it has
	 * closed what it holds.
	 */
	private void assertRefused(Kind kind, String operation, String advice, Consumer<GpuStream> refused) {
		Kernel append = kernel(ContractKernels.APPEND);
		long failedBefore = graphs().stats().failedCaptures();
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			GpuStream stream = lease.stream();
			stream.waitFor(log.stream());
			try (GraphCapture capture = graphs().beginCapture("refusing", stream)) {
				assertThatThrownBy(() -> refused.accept(stream)).isInstanceOfSatisfying(GraphCaptureException.class,
						(ex) -> {
							assertThat(ex.kind()).isEqualTo(kind);
							assertThat(ex.getMessage()).contains(operation).contains(advice)
								.contains("The capture has been ended and discarded");
						});
				assertThat(capture.isCapturing()).isFalse();
				assertThatThrownBy(capture::end).isInstanceOfSatisfying(GraphCaptureException.class,
						(ex) -> assertThat(ex.kind()).isEqualTo(Kind.ENDED))
					.hasCauseInstanceOf(GraphCaptureException.class);
				// Usable at once, still inside the try: the work runs, it is not recorded.
				this.launcher.launch(stream, append, ONE, log, 9);
				stream.synchronize();
			}
			assertThat(read(log, 2, stream)).containsExactly(1, 9);
			assertThat(this.launcher.currentStream()).as("the capture's scope was closed").isNotEqualTo(stream);
		}
		assertThat(graphs().stats().failedCaptures()).isEqualTo(failedBefore + 1);
		assertThat(graphs().graphs()).isEmpty();
	}

	// ---- host-side waits -----------------------------------------------------------------------

	@Test
	void synchronizingTheCapturedStreamIsRefused() {
		assertRefused(Kind.HOST_WAIT, "synchronize()", "Wait after the capture has ended", GpuStream::synchronize);
		assertNothingLeaked();
	}

	@Test
	void isIdleOfTheCapturedStreamIsRefused() {
		assertRefused(Kind.HOST_WAIT, "isIdle()", "for the replay", GpuStream::isIdle);
		assertNothingLeaked();
	}

	@Test
	void aCompletionOfTheCapturedStreamIsRefused() {
		assertRefused(Kind.HOST_WAIT, "completion()", "for the replay", GpuStream::completion);
		assertNothingLeaked();
	}

	@Test
	void synchronizingTheContextOrTheCurrentStreamWhileCapturingIsRefused() {
		assertRefused(Kind.HOST_WAIT, "GpuContext.synchronizeDevice()", "for the replay",
				(stream) -> this.context.synchronizeDevice());
		assertRefused(Kind.HOST_WAIT, "synchronize()", "for the replay", (stream) -> this.launcher.currentStream().synchronize());
		assertNothingLeaked();
	}

	@Test
	void waitingForTheFutureOfWorkBegunBeforeTheCaptureIsRefused() {
		Kernel sleep = kernel(ContractKernels.SLEEP_THEN_SET);
		try (StreamLease busy = this.pool.acquire(); DeviceBuffer flag = zeros(1)) {
			busy.stream().waitFor(flag.stream());
			this.launcher.launch(busy.stream(), sleep, ONE, flag, 0, 1, 500);
			CompletableFuture<Void> pending = busy.stream().completion();
			assertRefused(Kind.HOST_WAIT, "Waiting for a future of stream work", "for the replay",
					(stream) -> pending.join());
			pending.join();
		}
		assertNothingLeaked();
	}

	@Test
	void synchronizingOrQueryingAnEventWhileCapturingIsRefused() {
		try (GpuEvent event = this.context.events().create()) {
			assertRefused(Kind.HOST_WAIT, "Event synchronize()", "for the replay", (stream) -> event.synchronize());
			assertRefused(Kind.HOST_WAIT, "Event isComplete()", "for the replay", (stream) -> event.isComplete());
		}
		assertNothingLeaked();
	}

	// ---- copies, allocations, loads ----------------------------------------------------------------

	@Test
	void copiesFromOrIntoJavaArraysAreRefusedPointingToHostBuffers() {
		try (DeviceBuffer buffer = zeros(4)) {
			assertRefused(Kind.STAGED_COPY, "Upload from a Java array", "Copy through a HostBuffer",
					(stream) -> buffer.upload(HostArray.of(new int[4]), stream));
			assertRefused(Kind.STAGED_COPY, "Download into a Java array", "Copy through a HostBuffer",
					(stream) -> buffer.download(HostArray.of(new int[4]), stream));
			// launcher.upload allocates first: the allocation is what is refused.
			assertRefused(Kind.ALLOCATION, "Allocating a device buffer of 0 bytes", "before the capture",
					(stream) -> this.launcher.upload(HostArray.of(new float[0])));
		}
		assertNothingLeaked();
	}

	@Test
	void allocationsAndFreesAreRefused() {
		assertRefused(Kind.ALLOCATION, "Allocating a device buffer of 64 bytes", "allocate buffers before the capture",
				(stream) -> this.launcher.allocate(16, ElementType.FLOAT));
		assertRefused(Kind.ALLOCATION, "Allocating a host buffer of 64 bytes", "before the capture",
				(stream) -> this.launcher.allocateHost(64));
		DeviceBuffer kept = zeros(4);
		assertRefused(Kind.ALLOCATION, "Closing (freeing) a device buffer of 16 bytes", "close them after it ends",
				(stream) -> kept.close());
		assertThat(kept.isClosed()).as("the refused close left the buffer open").isFalse();
		kept.close();
		assertNothingLeaked();
	}

	@Test
	void loadingAKernelWhileCapturingIsRefused() {
		assertRefused(Kind.KERNEL_LOAD, "Loading kernel 'sum_cells'", "load kernels before the capture",
				(stream) -> this.launcher.load(ContractKernels.SUM_CELLS));
		assertThat(this.launcher.kernels()).noneMatch((kernel) -> kernel.name().equals("sum_cells"));
		assertNothingLeaked();
	}

	// ---- streams ---------------------------------------------------------------------------------

	@Test
	void aLaunchOnAStreamThatIsNotPartOfTheCaptureIsRefused() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease other = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			other.stream().waitFor(log.stream());
			assertRefused(Kind.FOREIGN_STREAM, "Launch of kernel 'append' on stream " + other.stream().name(),
					"is not part of the capture", (stream) -> this.launcher.launch(other.stream(), append, ONE, log, 1));
			assertThat(read(log, 1, other.stream())).as("the refused launch did not run").containsExactly(0);
		}
		assertNothingLeaked();
	}

	@Test
	void aWaitInsideTheCaptureForWorkOutsideItIsRefused() {
		try (StreamLease other = this.pool.acquire(); GpuEvent outside = this.context.events().create()) {
			other.stream().record(outside);
			assertRefused(Kind.OUTSIDE_DEPENDENCY, "waitFor(event)", "Order that work before the capture begins",
					(stream) -> stream.waitFor(outside));
			assertRefused(Kind.OUTSIDE_DEPENDENCY, ".waitFor(" + other.stream().name() + ")",
					"Order that work before the capture begins", (stream) -> stream.waitFor(other.stream()));
		}
		assertNothingLeaked();
	}

	@Test
	void aCaptureInsideACaptureIsRefused() {
		try (StreamLease other = this.pool.acquire()) {
			assertRefused(Kind.NESTED, "beginCapture", "captures do not nest",
					(stream) -> graphs().beginCapture("inner", other.stream()));
		}
		assertNothingLeaked();
	}

	@Test
	void aDefaultStreamCannotJoinACaptureAndStaysUsable() {
		GpuStream byDefault = this.context.defaultStream();
		assertRefused(Kind.DEFAULT_STREAM, "Stream " + byDefault.name() + ".waitFor(", "Lease a pooled stream",
				(stream) -> byDefault.waitFor(stream));
		try (GpuEvent fork = this.context.events().create()) {
			assertRefused(Kind.DEFAULT_STREAM, "Stream " + byDefault.name() + ".waitFor(event)", "Lease a pooled stream",
					(stream) -> {
						stream.record(fork);
						byDefault.waitFor(fork);
					});
		}
		try (GpuContext legacy = builder().defaultStream(DefaultStreamMode.LEGACY).kernelTiming(KernelTiming.OFF).open();
				StreamLease lease = legacy.streams().acquire();
				GraphCapture capture = GpuGraphs.of(legacy).beginCapture(lease.stream())) {
			assertThatThrownBy(() -> legacy.defaultStream().waitFor(lease.stream()))
				.isInstanceOfSatisfying(GraphCaptureException.class,
						(ex) -> assertThat(ex.kind()).isEqualTo(Kind.DEFAULT_STREAM));
			assertThat(capture.isCapturing()).isFalse();
			legacy.defaultStream().synchronize();
		}
		byDefault.synchronize(); // never part of a capture: host waits on it are allowed
		assertNothingLeaked();
	}

	@Test
	void aStreamThatJoinedAndWasNotJoinedBackFailsTheEndAndIsUsableAfterwards() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); StreamLease side = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			GpuStream stream = lease.stream();
			stream.waitFor(log.stream());
			side.stream().waitFor(log.stream());
			try (GraphCapture capture = graphs().beginCapture("unjoined", stream)) {
				side.stream().waitFor(stream); // joins
				this.launcher.launch(side.stream(), append, ONE, log, 1);
				assertThatThrownBy(capture::end).isInstanceOfSatisfying(GraphCaptureException.class, (ex) -> {
					assertThat(ex.kind()).isEqualTo(Kind.UNJOINED);
					assertThat(ex.getMessage()).contains(side.stream().name())
						.contains(stream.name() + ".waitFor(" + side.stream().name() + ")");
				});
			}
			// Both streams take work again. The appends are a read-modify-write of one counter, so the second is
			// ordered after the first: unordered, they would race on any backend, and the capture's own launch
			// (value 1) must not have run at all.
			this.launcher.launch(side.stream(), append, ONE, log, 2);
			stream.waitFor(side.stream());
			this.launcher.launch(stream, append, ONE, log, 3);
			assertThat(read(log, 3, stream)).containsExactly(2, 2, 3);
		}
		assertThat(graphs().stats().failedCaptures()).isEqualTo(1);
		assertNothingLeaked();
	}

	@Test
	void capturingOnADefaultStreamIsRefused() {
		assertThatThrownBy(() -> graphs().beginCapture("default", this.context.defaultStream()))
			.isInstanceOfSatisfying(GraphCaptureException.class, (ex) -> {
				assertThat(ex.kind()).isEqualTo(Kind.DEFAULT_STREAM);
				assertThat(ex.getMessage()).contains("DEFAULT_PER_THREAD").contains("lease a pooled stream");
			});
		try (GpuContext legacy = builder().defaultStream(DefaultStreamMode.LEGACY).kernelTiming(KernelTiming.OFF).open()) {
			assertThatThrownBy(() -> GpuGraphs.of(legacy).beginCapture(legacy.defaultStream()))
				.isInstanceOfSatisfying(GraphCaptureException.class, (ex) -> {
					assertThat(ex.kind()).isEqualTo(Kind.DEFAULT_STREAM);
					assertThat(ex.getMessage()).contains("DEFAULT_LEGACY");
				});
			legacy.defaultStream().synchronize();
		}
		assertThat(this.launcher.currentStream()).isEqualTo(this.context.defaultStream());
		assertNothingLeaked();
	}

	@Test
	void anotherThreadsWorkOnTheCapturedStreamIsRefusedAndTheCaptureGoesOn() throws Exception {
		Kernel append = kernel(ContractKernels.APPEND);
		ExecutorService other = Executors.newSingleThreadExecutor();
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			GpuStream stream = lease.stream();
			stream.waitFor(log.stream());
			GpuGraph graph;
			try (GraphCapture capture = graphs().beginCapture("mine", stream)) {
				this.launcher.launch(append, ONE, log, 1);
				Future<?> theirs = other.submit(() -> this.launcher.launch(stream, append, ONE, log, 2));
				assertThatThrownBy(theirs::get).hasCauseInstanceOf(GraphCaptureException.class)
					.cause().hasMessageContaining("Only the thread that captures may use a stream while it is captured");
				Future<?> wait = other.submit(stream::synchronize);
				assertThatThrownBy(wait::get).cause().isInstanceOfSatisfying(GraphCaptureException.class,
						(ex) -> assertThat(ex.kind()).isEqualTo(Kind.HOST_WAIT));
				assertThat(capture.isCapturing()).as("another thread's mistake leaves the capture alone").isTrue();
				graph = capture.end();
			}
			try (graph) {
				graph.launch(stream);
				assertThat(read(log, 2, stream)).containsExactly(1, 1);
			}
		}
		finally {
			other.shutdownNow();
		}
		assertNothingLeaked();
	}

	@Test
	void anotherThreadsFirstUseOfABufferOwnedByTheCapturedStreamIsRefusedAndTheCaptureGoesOn() throws Exception {
		Kernel append = kernel(ContractKernels.APPEND);
		ExecutorService other = Executors.newSingleThreadExecutor();
		try (StreamLease lease = this.pool.acquire(); StreamLease theirs = this.pool.acquire()) {
			GpuStream stream = lease.stream();
			DeviceBuffer log = this.launcher.callWithStream(stream, () -> zeros(4)); // owned by the captured stream
			try (log) {
				GpuGraph graph;
				try (GraphCapture capture = graphs().beginCapture("owner", stream)) {
					this.launcher.launch(append, ONE, log, 1);
					// Its first use on their streams would order them after the owner, which is being captured:
					// they would join the capture, and their launches would be recorded instead of run.
					Runnable onTheirLease = () -> this.launcher.launch(theirs.stream(), append, ONE, log, 2);
					Runnable onTheirDefaultStream = () -> this.launcher.launch(append, ONE, log, 2);
					for (Runnable launch : List.of(onTheirLease, onTheirDefaultStream)) {
						Future<?> use = other.submit(launch);
						assertThatThrownBy(use::get).cause().isInstanceOfSatisfying(GraphCaptureException.class, (ex) -> {
							assertThat(ex.kind()).isEqualTo(Kind.FOREIGN_STREAM);
							assertThat(ex.getMessage()).contains("owning stream " + stream.name())
								.contains("before the capture begins or after it ends");
						});
					}
					assertThat(capture.isCapturing()).as("another thread's mistake leaves the capture alone").isTrue();
					graph = capture.end();
				}
				try (graph) {
					graph.launch(stream);
				}
				// After the capture the same use is ordered as usual.
				other.submit(() -> this.launcher.launch(theirs.stream(), append, ONE, log, 2)).get();
				stream.waitFor(theirs.stream());
				assertThat(read(log, 3, stream)).containsExactly(2, 1, 2);
			}
		}
		finally {
			other.shutdownNow();
		}
		assertNothingLeaked();
	}

	@Test
	void anEventRecordedInACaptureCannotBeWaitedForOrQueriedAfterIt() {
		try (StreamLease lease = this.pool.acquire(); StreamLease other = this.pool.acquire();
				GpuEvent marker = this.context.events().create()) {
			try (GpuGraph graph = graphs().capture("marked", lease.stream(), () -> lease.stream().record(marker))) {
				assertThatThrownBy(marker::isComplete).isInstanceOfSatisfying(GraphCaptureException.class,
						(ex) -> assertThat(ex.kind()).isEqualTo(Kind.OUTSIDE_DEPENDENCY))
					.hasMessageContaining("Record the event again outside a capture");
				assertThatThrownBy(() -> other.stream().waitFor(marker)).isInstanceOf(GraphCaptureException.class);
				other.stream().record(marker); // recorded outside: an ordinary event again
				assertThatCode(marker::isComplete).as("an ordinary event again").doesNotThrowAnyException();
				marker.synchronize();
			}
		}
		assertNothingLeaked();
	}

	// ---- ownership ---------------------------------------------------------------------------------

	@Test
	void aReplayAfterCloseIsRefusedAndClosingTwiceIsHarmless() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			lease.stream().waitFor(log.stream());
			GpuGraph graph = graphs().capture("closed", lease.stream(), () -> this.launcher.launch(append, ONE, log, 1));
			graph.launch(lease.stream());
			graph.close();
			assertThatCode(graph::close).doesNotThrowAnyException();
			assertThat(graph.isClosed()).isTrue();
			assertThatThrownBy(() -> graph.launch(lease.stream())).isInstanceOf(GpuException.class)
				.hasMessageContaining("Graph 'closed' was used after it was closed");
			assertThat(read(log, 2, lease.stream())).as("the replay enqueued before close ran").containsExactly(1, 1);
		}
		assertThat(graphs().graphs()).isEmpty();
		assertNothingLeaked();
	}

	@Test
	void aReplayFindingABufferOfTheGraphClosedIsRefusedNamingIt() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire()) {
			DeviceBuffer log = zeros(4);
			lease.stream().waitFor(log.stream());
			try (GpuGraph graph = graphs().capture("uses-log", lease.stream(),
					() -> this.launcher.launch(append, ONE, log, 1))) {
				log.close();
				assertThatThrownBy(() -> graph.launch(lease.stream())).isInstanceOf(GpuException.class)
					.hasMessageContaining("Graph 'uses-log' cannot be replayed")
					.hasMessageContaining("device buffer of 16 bytes it uses was closed");
			}
		}
		assertNothingLeaked();
	}

	@Test
	void closingTheContextDestroysItsLiveGraphs() {
		Kernel append = kernel(ContractKernels.APPEND);
		GpuGraph graph;
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			lease.stream().waitFor(log.stream());
			graph = graphs().capture("left-open", lease.stream(), () -> this.launcher.launch(append, ONE, log, 1));
			graph.launch(lease.stream());
		}
		this.context.close();
		assertThat(graph.isClosed()).isTrue();
		assertThatCode(graph::close).doesNotThrowAnyException();
		assertThatThrownBy(() -> graph.launch(this.context.defaultStream())).isInstanceOf(ContextClosedException.class);
	}

	@Test
	void closingTheContextDuringACaptureLeavesItsEndRefusedAndItsCloseHarmless() {
		Kernel append = kernel(ContractKernels.APPEND);
		StreamLease lease = this.pool.acquire();
		DeviceBuffer log = zeros(4);
		lease.stream().waitFor(log.stream());
		GraphCapture capture = graphs().beginCapture("cut", lease.stream());
		this.launcher.launch(append, ONE, log, 1);
		this.context.close();
		assertThat(capture.isCapturing()).as("the close ended the capture, before it destroyed the streams").isFalse();
		assertThatThrownBy(capture::end).isInstanceOf(ContextClosedException.class);
		assertThatCode(capture::close).doesNotThrowAnyException();
		assertThatCode(lease::close).doesNotThrowAnyException();
		assertThatCode(log::close).doesNotThrowAnyException();
	}

	@Test
	void closingTheContextEndsACaptureAnotherThreadLeftOpen() throws Exception {
		Kernel append = kernel(ContractKernels.APPEND);
		ExecutorService other = Executors.newSingleThreadExecutor();
		try {
			StreamLease lease = this.pool.acquire();
			DeviceBuffer log = zeros(4);
			lease.stream().waitFor(log.stream());
			GraphCapture capture = other.submit(() -> {
				GraphCapture begun = graphs().beginCapture("abandoned", lease.stream());
				this.launcher.launch(append, ONE, log, 1);
				return begun;
			}).get();
			this.context.close();
			assertThat(capture.isCapturing()).as("ended by the close, on the closing thread").isFalse();
			assertThat(other.submit(() -> {
				capture.close();
				return true;
			}).get()).isTrue();
		}
		finally {
			other.shutdownNow();
		}
	}

	@Test
	void theLeakTrackerSeesAGraphUntilItIsClosed() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (LeakTracker tracker = LeakTracker.start(); StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			lease.stream().waitFor(log.stream());
			GpuGraph graph = graphs().capture("tracked", lease.stream(), () -> this.launcher.launch(append, ONE, log, 1));
			assertThat(tracker.openResources()).anySatisfy((resource) -> {
				assertThat(resource.kind()).isEqualTo(LeakTracker.Kind.GRAPH);
				assertThat(resource.description()).contains("Graph 'tracked'");
				assertThat(resource.acquiredAt()).isNotNull();
			});
			graph.close();
			assertThat(tracker.openResources()).noneMatch((resource) -> resource.kind() == LeakTracker.Kind.GRAPH);
		}
		assertNothingLeaked();
	}

	@Test
	void aCaptureClosedWithoutEndIsDiscarded() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zeros(4)) {
			lease.stream().waitFor(log.stream());
			try (GraphCapture capture = graphs().beginCapture("dropped", lease.stream())) {
				this.launcher.launch(append, ONE, log, 1);
			}
			assertThat(graphs().stats().failedCaptures()).isEqualTo(1);
			assertThat(read(log, 2, lease.stream())).as("discarded work never runs").containsExactly(0, 0);
		}
		assertNothingLeaked();
	}

}
