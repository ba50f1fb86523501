package dev.gpucompute.cpu;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.gpucompute.GpuException;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * A capture on the CPU backend: the operations enqueued on its streams are recorded as graph nodes
 * instead of queued, with CUDA's dependency rules. Each stream of the capture has a set of nodes its
 * next operation waits for (its "tail"); an event recorded on a capturing stream marks that set, and a
 * stream that waits for such an event joins the capture (a fork) or adds the set to its own (a join).
 * At the end every node nobody waits for must be in the origin's set, or a stream was not joined back:
 * CUDA's {@code CUDA_ERROR_STREAM_CAPTURE_UNJOINED}, refused here the same way.
 *
 * <p>Thread-safe: guarded by this object; a stream's capture field is written under that stream's lock.
 */
final class CpuCapture implements NativeCapture {

	/** A point of the capture an event marks: the nodes work after it waits for. */
	record Point(CpuCapture capture, int[] nodes) {
	}

	private final CpuStream origin;

	// guarded by this
	private final List<CpuGraph.Node> nodes = new ArrayList<>();

	private final List<int[]> dependencies = new ArrayList<>();

	private final Map<CpuStream, int[]> tails = new IdentityHashMap<>();

	private boolean over;

	private CpuCapture(CpuStream origin) {
		this.origin = origin;
		this.tails.put(origin, new int[0]);
	}

	/** Begins capturing on {@code stream}. */
	static CpuCapture begin(CpuStream stream) {
		CpuCapture capture = new CpuCapture(stream);
		stream.beginCapture(capture);
		return capture;
	}

	@Override
	public NativeStream origin() {
		return this.origin;
	}

	synchronized boolean isActive() {
		return !this.over;
	}

	/** Records {@code op}, enqueued on {@code stream} (a stream of this capture), as a node. */
	void record(CpuStream stream, CpuStream.Op op) {
		CpuGraph.Node node = op.node();
		if (node == null) {
			throw new GpuException("This operation cannot be recorded in a graph on stream " + stream.name());
		}
		synchronized (this) {
			if (this.over) {
				throw new GpuException("The capture on stream " + this.origin.name() + " has ended");
			}
			int id = this.nodes.size();
			this.nodes.add(node);
			this.dependencies.add(this.tails.getOrDefault(stream, new int[0]));
			this.tails.put(stream, new int[] { id });
		}
	}

	/** The point {@code stream} has reached in the capture, for an event recorded there. */
	synchronized Point point(CpuStream stream) {
		return new Point(this, this.tails.getOrDefault(stream, new int[0]).clone());
	}

	/**
	 * {@code stream} waits for {@code point}: its next node waits for the point's nodes too; a stream
	 * not in the capture yet joins it.
	 */
	void join(CpuStream stream, Point point) {
		boolean joins;
		synchronized (this) {
			if (this.over) {
				throw new GpuException("The event was recorded in a capture that has ended");
			}
			int[] own = this.tails.get(stream);
			joins = own == null;
			this.tails.put(stream, union((own != null) ? own : new int[0], point.nodes()));
		}
		if (joins) {
			stream.joinCapture(this);
		}
	}

	private static int[] union(int[] a, int[] b) {
		return java.util.stream.IntStream.concat(Arrays.stream(a), Arrays.stream(b)).distinct().sorted().toArray();
	}

	@Override
	public NativeGraph end() {
		List<CpuStream> members;
		String unjoined;
		CpuGraph graph;
		synchronized (this) {
			if (this.over) {
				throw new GpuException("The capture on stream " + this.origin.name() + " has ended already");
			}
			this.over = true;
			members = List.copyOf(this.tails.keySet());
			unjoined = unjoined();
			graph = (unjoined == null) ? new CpuGraph(this.nodes, this.dependencies) : null;
		}
		for (CpuStream member : members) {
			member.leaveCapture(this);
		}
		if (unjoined != null) {
			throw new GraphCaptureException(GraphCaptureException.Kind.UNJOINED, "end of the capture",
					"The capture on stream " + this.origin.name() + " cannot end: stream " + unjoined + " joined it and its "
							+ "work was not joined back. Make the capture's stream wait for it before end() ("
							+ this.origin.name() + ".waitFor(" + unjoined + ")). The capture has been discarded");
		}
		return Objects.requireNonNull(graph, "made when every stream joined back");
	}

	/** A stream whose last nodes the origin does not wait for, or {@code null}; with the lock held. */
	private @Nullable String unjoined() {
		boolean[] waitedFor = new boolean[this.nodes.size()];
		for (int[] dependency : this.dependencies) {
			for (int node : dependency) {
				waitedFor[node] = true;
			}
		}
		int[] end = this.tails.get(this.origin);
		for (Map.Entry<CpuStream, int[]> tail : this.tails.entrySet()) {
			for (int node : tail.getValue()) {
				if (!waitedFor[node] && Arrays.stream(end).noneMatch((last) -> last == node)) {
					return tail.getKey().name();
				}
			}
		}
		return null;
	}

	@Override
	public void abort() {
		List<CpuStream> members;
		synchronized (this) {
			if (this.over) {
				return;
			}
			this.over = true;
			members = List.copyOf(this.tails.keySet());
		}
		for (CpuStream member : members) {
			member.leaveCapture(this);
		}
	}

	@Override
	public String toString() {
		return "CpuCapture[" + this.origin.name() + "]";
	}

}
