package dev.gpucompute.contract.graph;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.Kernel;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.contract.GpuContractFixture;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCapture;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.graph.GraphStats;
import dev.gpucompute.graph.GraphUpdate;

/**
 * Graphs on every backend (docs/runtime.md, "Graphs"): a capture records instead of running, a replay
 * runs the recorded work in order on any stream of the context, with the buffers it captured and their
 * current contents, updates apply in place or anew, and a stream-parallel group becomes one graph whose
 * branches still overlap. The refusals and ownership rules are {@link GraphRulesContractSuite}'s. A
 * subclass supplies the backend through {@link #builder()}.
 */
public abstract class GraphContractSuite extends GpuContractFixture {

	static final LaunchConfig SMALL = LaunchConfig.linear(64, 32);

	protected GpuGraphs graphs() {
		return GpuGraphs.of(this.context);
	}

	/** A buffer of {@code ints} zeros that {@code stream} may use (ordered after its allocation). */
	DeviceBuffer zerosFor(GpuStream stream, int ints) {
		DeviceBuffer buffer = zeros(ints);
		stream.waitFor(buffer.stream());
		return buffer;
	}

	@Test
	void aCaptureRecordsAndEachReplayRunsTheRecordedWork() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zerosFor(lease.stream(), 16)) {
			GpuStream stream = lease.stream();
			GpuGraph graph;
			try (GraphCapture capture = graphs().beginCapture("appends", stream)) {
				assertThat(this.launcher.currentStream()).as("the capture's stream is current").isEqualTo(stream);
				for (int id = 1; id <= 3; id++) {
					this.launcher.launch(append, ONE, log, id); // the current stream: the capture's
				}
				graph = capture.end();
			}
			try (graph) {
				assertThat(read(log, 4, stream)).as("nothing ran while capturing").containsExactly(0, 0, 0, 0);
				assertThat(graph.nodeCount()).isEqualTo(3);
				assertThat(graph.name()).isEqualTo("appends");
				graph.launch(stream);
				assertThat(read(log, 4, stream)).containsExactly(3, 1, 2, 3);
				graph.launch(stream);
				graph.replay(stream).join();
				assertThat(read(log, 10, stream)).containsExactly(9, 1, 2, 3, 1, 2, 3, 1, 2, 3);
				assertThat(graph.info().replays()).isEqualTo(3);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void replaysOfOneGraphOnTwoStreamsRunOneAfterTheOther() {
		Kernel append = kernel(ContractKernels.APPEND);
		Kernel sleep = kernel(ContractKernels.SLEEP_THEN_SET);
		try (StreamLease a = this.pool.acquire(); StreamLease b = this.pool.acquire();
				DeviceBuffer log = zerosFor(a.stream(), 8); DeviceBuffer flag = zerosFor(a.stream(), 1)) {
			b.stream().waitFor(a.stream());
			try (GpuGraph graph = graphs().capture("slow-pair", a.stream(), () -> {
				this.launcher.launch(append, ONE, log, 1);
				this.launcher.launch(sleep, ONE, flag, 0, 1, 300); // a window another replay would fall into
				this.launcher.launch(append, ONE, log, 2);
			})) {
				graph.launch(a.stream());
				graph.launch(b.stream()); // nothing orders b after a but the graph's own rule
				b.stream().synchronize();
				a.stream().synchronize();
				assertThat(read(log, 5, a.stream())).containsExactly(4, 1, 2, 1, 2);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void aReplayWaitsForTheOwningStreamOfEachBufferItUses() {
		Kernel sleep = kernel(ContractKernels.SLEEP_THEN_SET);
		Kernel copyCell = kernel(ContractKernels.COPY_CELL);
		try (StreamLease owner = this.pool.acquire(); StreamLease replay = this.pool.acquire()) {
			DeviceBuffer src = this.launcher.callWithStream(owner.stream(), () -> zeros(1)); // owned by owner
			try (src; DeviceBuffer dst = zerosFor(replay.stream(), 1);
					GpuGraph graph = graphs().capture("copy", replay.stream(),
							() -> this.launcher.launch(copyCell, ONE, src, 0, dst, 0, 1))) {
				this.launcher.launch(owner.stream(), sleep, ONE, src, 0, 42, 300); // still running at the replay
				graph.launch(replay.stream());
				assertThat(read(dst, 1, replay.stream())).as("the replay waited for the buffer's stream").containsExactly(42);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void buffersKeepTheirAddressesAndReplaysSeeTheirCurrentContents() {
		Kernel saxpy = kernel(ContractKernels.SAXPY);
		int n = 64;
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer x = this.launcher.allocate(n, dev.gpucompute.ElementType.FLOAT);
				DeviceBuffer y = this.launcher.allocate(n, dev.gpucompute.ElementType.FLOAT)) {
			GpuStream stream = lease.stream();
			x.upload(HostArray.of(filled(n, 1f)), stream);
			y.upload(HostArray.of(filled(n, 0f)), stream);
			try (GpuGraph graph = graphs().capture("saxpy", stream,
					() -> this.launcher.launch(saxpy, SMALL, n, 2f, x, y))) {
				graph.launch(stream);
				assertThat(floats(y, n, stream)).containsOnly(2f);
				x.upload(HostArray.of(filled(n, 10f)), stream); // new input, same buffer
				graph.launch(stream);
				assertThat(floats(y, n, stream)).containsOnly(22f);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void copiesThroughHostBuffersAreReplayedWithTheHostBuffersCurrentBytes() {
		Kernel copyCell = kernel(ContractKernels.COPY_CELL);
		try (StreamLease lease = this.pool.acquire(); HostBuffer in = this.launcher.allocateHost(16);
				HostBuffer out = this.launcher.allocateHost(16); DeviceBuffer src = zerosFor(lease.stream(), 4);
				DeviceBuffer dst = zerosFor(lease.stream(), 4)) {
			GpuStream stream = lease.stream();
			GpuGraph graph;
			try (GraphCapture capture = graphs().beginCapture("round-trip", stream)) {
				assertThat(src.upload(in, stream)).as("a recorded copy's future is complete at once").isDone();
				this.launcher.launch(copyCell, ONE, src, 0, dst, 0, 3); // dst[0] = src[0] * 3
				dst.download(out, stream);
				graph = capture.end();
			}
			try (graph) {
				assertThat(graph.nodeCount()).isEqualTo(3);
				for (int value : new int[] { 5, 11, 40 }) {
					in.put(0, HostArray.of(new int[] { value }));
					graph.replay(stream).join();
					int[] result = new int[1];
					out.get(0, HostArray.of(result));
					assertThat(result[0]).isEqualTo(3 * value);
				}
			}
		}
		assertNothingLeaked();
	}

	@Test
	void aNewCaptureOfTheSameShapeUpdatesInPlaceAndAnotherShapeIsInstantiatedAnew() {
		Kernel saxpy = kernel(ContractKernels.SAXPY);
		Kernel append = kernel(ContractKernels.APPEND);
		int n = 32;
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer x = this.launcher.allocate(n, dev.gpucompute.ElementType.FLOAT);
				DeviceBuffer y = this.launcher.allocate(n, dev.gpucompute.ElementType.FLOAT);
				DeviceBuffer z = this.launcher.allocate(n, dev.gpucompute.ElementType.FLOAT);
				DeviceBuffer log = zerosFor(lease.stream(), 4)) {
			GpuStream stream = lease.stream();
			x.upload(HostArray.of(filled(n, 1f)), stream);
			y.upload(HostArray.of(filled(n, 0f)), stream);
			z.upload(HostArray.of(filled(n, 100f)), stream);
			try (GpuGraph graph = graphs().capture("saxpy", stream, () -> this.launcher.launch(saxpy, SMALL, n, 2f, x, y))) {
				GraphUpdate same = graphs().update(graph, stream, () -> this.launcher.launch(saxpy, SMALL, n, 5f, x, z));
				assertThat(same).isEqualTo(GraphUpdate.UPDATED_IN_PLACE);
				graph.launch(stream);
				assertThat(floats(y, n, stream)).as("the old arguments are gone").containsOnly(0f);
				assertThat(floats(z, n, stream)).containsOnly(105f);

				GraphUpdate other = graphs().update(graph, stream, () -> {
					this.launcher.launch(append, ONE, log, 4);
					this.launcher.launch(append, ONE, log, 5);
				});
				assertThat(other).isEqualTo(GraphUpdate.REINSTANTIATED);
				assertThat(graph.nodeCount()).isEqualTo(2);
				graph.launch(stream);
				assertThat(read(log, 3, stream)).containsExactly(2, 4, 5);
				assertThat(graph.info().updatesInPlace()).isEqualTo(1);
				assertThat(graph.info().reinstantiations()).isEqualTo(1);
				GraphStats stats = graphs().stats();
				assertThat(stats.updatesInPlace()).isEqualTo(1);
				assertThat(stats.reinstantiations()).isEqualTo(1);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void aStreamParallelGroupBecomesOneGraphWhoseBranchesStillOverlap() {
		Kernel rendezvous = kernel(ContractKernels.RENDEZVOUS);
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer flags = zerosFor(lease.stream(), 2);
				DeviceBuffer seen = zerosFor(lease.stream(), 2); DeviceBuffer log = zerosFor(lease.stream(), 4)) {
			GpuStream stream = lease.stream();
			Consumer<GpuStream> first = (branch) -> this.launcher.launch(rendezvous, ONE, 0, 1, flags, seen,
					RENDEZVOUS_TIMEOUT_MS);
			Consumer<GpuStream> second = (branch) -> this.launcher.launch(rendezvous, ONE, 1, 0, flags, seen,
					RENDEZVOUS_TIMEOUT_MS);
			try (GpuGraph graph = graphs().capture("group", stream, () -> {
				this.launcher.parallel(List.of(first, second));
				assertThat(this.pool.stats().active()).as("the branches' streams still record: not back yet")
					.isEqualTo(3);
				this.launcher.launch(append, ONE, log, 1); // after both branches
			})) {
				assertThat(graph.nodeCount()).isEqualTo(3);
				assertThat(this.pool.stats().active()).as("the branches' leases went back when the capture ended")
					.isEqualTo(1);
				graph.launch(stream);
				stream.synchronize();
				assertThat(read(seen, 2, stream)).as("each branch saw the other running").containsExactly(1, 1);
				assertThat(read(log, 2, stream)).containsExactly(1, 1);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void aStreamThatJoinsTheCaptureThroughAnEventAndIsJoinedBackIsPartOfTheGraph() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); StreamLease side = this.pool.acquire();
				DeviceBuffer first = zerosFor(lease.stream(), 4); DeviceBuffer second = zerosFor(lease.stream(), 4);
				dev.gpucompute.GpuEvent fork = this.context.events().create()) {
			GpuStream stream = lease.stream();
			GpuGraph graph;
			try (GraphCapture capture = graphs().beginCapture("fork-join", stream)) {
				this.launcher.launch(append, ONE, first, 1);
				stream.record(fork);
				side.stream().waitFor(fork); // joins the capture
				this.launcher.launch(side.stream(), append, ONE, second, 2);
				stream.waitFor(side.stream()); // joined back
				this.launcher.launch(append, ONE, first, 3);
				graph = capture.end();
			}
			try (graph) {
				assertThat(graph.nodeCount()).isEqualTo(3);
				graph.replay(stream).join();
				assertThat(read(first, 3, stream)).containsExactly(2, 1, 3);
				assertThat(read(second, 2, stream)).containsExactly(1, 2);
			}
		}
		assertNothingLeaked();
	}

	@Test
	void anEmptyCaptureIsAGraphOfNothing() {
		try (StreamLease lease = this.pool.acquire();
				GpuGraph graph = graphs().capture("empty", lease.stream(), () -> {
				})) {
			assertThat(graph.nodeCount()).isZero();
			graph.launch(lease.stream());
			graph.replay(lease.stream()).join();
			lease.stream().synchronize();
		}
		assertNothingLeaked();
	}

	@Test
	void aCacheCapturesEachKeyOnceAndEvictsTheLeastRecentlyUsed() {
		Kernel append = kernel(ContractKernels.APPEND);
		try (StreamLease lease = this.pool.acquire(); DeviceBuffer log = zerosFor(lease.stream(), 32);
				dev.gpucompute.graph.GraphCache<Integer> cache = graphs().cache("by-size", 2)) {
			GpuStream stream = lease.stream();
			int[] captures = new int[1];
			Consumer<Integer> pipeline = (size) -> {
				captures[0]++;
				for (int i = 0; i < size; i++) {
					this.launcher.launch(append, ONE, log, size);
				}
			};
			cache.launch(1, stream, pipeline);
			cache.launch(2, stream, pipeline);
			cache.launch(1, stream, pipeline);
			assertThat(captures[0]).isEqualTo(2);
			cache.launch(3, stream, pipeline); // evicts 2, used least recently
			assertThat(cache.contains(2)).isFalse();
			assertThat(cache.contains(1)).isTrue();
			cache.replay(2, stream, pipeline).join(); // captured again
			assertThat(captures[0]).isEqualTo(4);
			assertThat(cache.stats()).isEqualTo(new dev.gpucompute.graph.GraphCache.Stats(1, 4, 2, 2));
			assertThat(read(log, 1, stream)[0]).isEqualTo(1 + 2 + 1 + 3 + 2);
			assertThat(graphs().graphs()).hasSize(2);
		}
		assertThat(graphs().graphs()).as("closing the cache closes its graphs").isEmpty();
		assertNothingLeaked();
	}

	@Test
	void aBatchHandlerReplaysTheGraphOfItsBatchSize() throws Exception {
		Kernel append = kernel(ContractKernels.APPEND);
		int[] captured = new int[1];
		try (DeviceBuffer log = zeros(64); dev.gpucompute.graph.GraphCache<Integer> bySize = graphs().cache("batch", 4)) {
			this.context.synchronizeDevice();
			Consumer<Integer> pipeline = (size) -> {
				captured[0]++;
				for (int i = 0; i < size; i++) {
					this.launcher.launch(append, ONE, log, size); // the current stream: the batch's
				}
			};
			try (dev.gpucompute.batch.GpuBatcher<Integer, Integer> batcher = dev.gpucompute.batch.GpuBatcher
				.builder(this.context, (dev.gpucompute.batch.Batch<Integer> batch) -> {
					bySize.launch(batch.size(), this.launcher.currentStream(), pipeline);
					return batch.items();
				})
				.name("graphs")
				.maxBatchSize(1)
				.build()) {
				for (int i = 0; i < 3; i++) {
					batcher.submit(i).get(30, java.util.concurrent.TimeUnit.SECONDS);
				}
			}
			assertThat(captured[0]).as("one capture for the one batch size").isEqualTo(1);
			assertThat(bySize.stats().hits()).isEqualTo(2);
			int[] entries = read(log, 4, this.context.defaultStream());
			assertThat(entries).containsExactly(3, 1, 1, 1);
		}
		assertNothingLeaked();
	}

	// ---- helpers ---------------------------------------------------------------------------------

	static float[] filled(int n, float value) {
		float[] values = new float[n];
		java.util.Arrays.fill(values, value);
		return values;
	}

	float[] floats(DeviceBuffer buffer, int n, GpuStream stream) {
		float[] host = new float[n];
		buffer.download(HostArray.of(host), stream).join();
		return host;
	}

	static LaunchConfig blocks(int blocks) {
		return LaunchConfig.of(Dim3.of(blocks), Dim3.of(1));
	}

}
