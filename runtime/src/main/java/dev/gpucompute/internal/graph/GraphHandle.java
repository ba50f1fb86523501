package dev.gpucompute.internal.graph;

import java.lang.ref.Cleaner;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.graph.GraphInfo;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.GraphUse;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The implementation of {@link GpuGraph}. A replay checks what a launch checks once for the whole
 * graph (the graph, the stream and its context, that no capture takes it in), prepares the resources
 * the graph uses (each buffer still open and ordered on the replay's stream) and enqueues the
 * instantiation: the per-operation checks were made while capturing.
 */
final class GraphHandle implements GpuGraph {

	private final GraphState state;

	private final Cleaner.@Nullable Cleanable cleanable;

	GraphHandle(GraphState state, boolean safetyNet) {
		this.state = state;
		// The safety net costs more than the graph's handle; it is paid only with leak detection on.
		this.cleanable = safetyNet ? Leaks.CLEANER.register(this, state) : null;
	}

	/**
	 * The runtime's graph behind {@code graph}.
	 * @throws GpuException when it is not one of the runtime's graphs
	 */
	static GraphHandle of(GpuGraph graph) {
		if (graph instanceof GraphHandle handle) {
			return handle;
		}
		throw new GpuException("Graph " + graph + " was not captured by the gpu-compute runtime");
	}

	GraphState state() {
		return this.state;
	}

	@Override
	public String name() {
		return this.state.name;
	}

	@Override
	public GpuContext context() {
		return this.state.room.lifecycle.owner();
	}

	@Override
	public int nodeCount() {
		return this.state.nodes();
	}

	@Override
	public void launch() {
		launch(this.state.room.streams.current());
	}

	@Override
	public void launch(GpuStream stream) {
		NativeStream target = target(stream);
		Object[] tokens = enqueue(stream, target);
		if (tokens != null) {
			this.state.room.completions.whenDone(target, (failure) -> ended(tokens));
		}
		counted();
	}

	@Override
	public CompletableFuture<Void> replay(GpuStream stream) {
		NativeStream target = target(stream);
		Graphs room = this.state.room;
		room.lifecycle.beginWork();
		try {
			Object[] tokens = enqueue(stream, target);
			counted();
			return room.completions.whenDone(target, (CompletableFuture<Void> done, GpuException failure) -> {
				if (tokens != null) {
					ended(tokens);
				}
				if (failure != null) {
					done.completeExceptionally(failure);
				}
				else {
					done.complete(null);
				}
			});
		}
		finally {
			room.lifecycle.endWork();
		}
	}

	/** The backend stream of a replay, after the checks a replay makes once for the whole graph. */
	private NativeStream target(GpuStream stream) {
		Objects.requireNonNull(stream, "stream");
		StreamHandle handle = StreamHandle.of(stream);
		NativeStream target = handle.use();
		Graphs room = this.state.room;
		room.lifecycle.ensureSame(handle.lifecycle(), "Stream ", stream.name());
		Captures captures = room.captures;
		if (captures.any()) {
			Capture capture = captures.forWork(target, "replay of graph '" + this.state.name + "'");
			if (capture != null) {
				throw captures.refuse(capture, GraphCaptureException.Kind.NESTED, "replay of graph '" + this.state.name
						+ "'", "A replay of graph '" + this.state.name + "' cannot be recorded by the " + capture
						+ ": replay it before or after the capture, or capture its work directly");
			}
		}
		return target;
	}

	/**
	 * Prepares what the graph uses for a replay on {@code stream} and enqueues the instantiation.
	 * @return the tokens of resources that must hear when the replay ends, or {@code null} for none
	 */
	private Object @Nullable [] enqueue(GpuStream stream, NativeStream target) {
		GraphState graph = this.state;
		synchronized (graph) {
			if (graph.closed.get()) {
				throw new GpuException("Graph '" + graph.name + "' was used after it was closed");
			}
			GraphState.Installed installed = graph.installed;
			GraphUse[] uses = installed.uses();
			Object[] tokens = installed.tracksReplays() ? new Object[uses.length] : null;
			int prepared = 0;
			try {
				for (; prepared < uses.length; prepared++) {
					Object token;
					try {
						token = uses[prepared].beforeReplay(stream);
					}
					catch (GpuException ex) {
						throw new GpuException("Graph '" + graph.name + "' cannot be replayed: " + ex.getMessage(), ex);
					}
					if (tokens != null) {
						tokens[prepared] = token;
					}
				}
				installed.exec().launch(target);
			}
			catch (RuntimeException | Error ex) {
				if (tokens != null) {
					for (int i = 0; i < prepared; i++) {
						uses[i].afterReplay(tokens[i]);
					}
				}
				throw ex;
			}
			if (tokens != null) {
				// The uses of this instantiation, which an update may replace before the replay ends.
				Object[] pairs = new Object[2 * uses.length];
				for (int i = 0; i < uses.length; i++) {
					pairs[2 * i] = uses[i];
					pairs[2 * i + 1] = tokens[i];
				}
				return pairs;
			}
			return null;
		}
	}

	private static void ended(Object[] pairs) {
		for (int i = 0; i < pairs.length; i += 2) {
			((GraphUse) pairs[i]).afterReplay(pairs[i + 1]);
		}
	}

	private void counted() {
		this.state.replays.increment();
		this.state.room.replayed(this.state);
	}

	@Override
	public GraphInfo info() {
		return this.state.info();
	}

	@Override
	public boolean isClosed() {
		return this.state.closed.get();
	}

	@Override
	public void close() {
		this.state.explicit = true;
		if (this.cleanable != null) {
			this.cleanable.clean();
		}
		else {
			this.state.run();
		}
	}

	@Override
	public String toString() {
		return "GpuGraph['" + this.state.name + "', " + nodeCount() + " operations" + (isClosed() ? ", closed" : "") + "]";
	}

}
