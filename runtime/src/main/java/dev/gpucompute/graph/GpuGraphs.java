package dev.gpucompute.graph;

import java.util.List;
import java.util.Objects;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;

/**
 * The graphs of one {@link GpuContext}: captures work into {@link GpuGraph}s, keeps keyed caches of
 * them ({@link GraphCache}), and reports them. {@code GpuGraphs.of(context)}; a bean in Spring.
 *
 * <pre>{@code
 * GpuGraphs graphs = GpuGraphs.of(context);
 * try (StreamLease lease = context.streams().acquire();
 *      GpuGraph step = graphs.capture("step", lease.stream(), () -> {
 *          launcher.launch(scale, config, n, 2f, data);
 *          launcher.launch(shift, config, n, 1f, data);
 *      })) {
 *     for (int i = 0; i < 1000; i++) {
 *         step.launch(lease.stream());            // both kernels, one call
 *     }
 *     lease.stream().synchronize();
 * }
 * }</pre>
 *
 * <p>Thread-safe; every thread may capture (one capture per thread at a time).
 */
public interface GpuGraphs {

	/**
	 * The graphs of {@code context}.
	 * @throws GpuException when {@code context} was not opened by the gpu-compute runtime
	 */
	static GpuGraphs of(GpuContext context) {
		Objects.requireNonNull(context, "context");
		if (context instanceof Host host) {
			return host.graphs();
		}
		throw new GpuException("Context " + context + " was not opened by the gpu-compute runtime, so it has no graphs");
	}

	/** The context whose graphs these are. */
	GpuContext context();

	/**
	 * Begins capturing the calling thread's work on {@code stream} into a graph named "graph"; see
	 * {@link GraphCapture} for what is recorded and what is refused. The stream becomes the thread's
	 * current stream until the capture closes.
	 * @throws GraphCaptureException when {@code stream} is a default stream (kind
	 * {@code DEFAULT_STREAM}: capture on a pooled stream) or the thread or the stream captures already
	 * (kind {@code NESTED})
	 */
	default GraphCapture beginCapture(GpuStream stream) {
		return beginCapture("graph", stream);
	}

	/** {@link #beginCapture(GpuStream)} for a graph named {@code name} (logs, metrics, the endpoint). */
	GraphCapture beginCapture(String name, GpuStream stream);

	/**
	 * Captures what {@code work} issues on {@code stream} and returns it as a graph the caller owns:
	 * {@link #beginCapture(String, GpuStream)}, {@code work}, {@link GraphCapture#end()}. When
	 * {@code work} throws, the capture is discarded and the exception rethrown.
	 */
	default GpuGraph capture(String name, GpuStream stream, Runnable work) {
		Objects.requireNonNull(work, "work");
		try (GraphCapture capture = beginCapture(name, stream)) {
			work.run();
			return capture.end();
		}
	}

	/**
	 * Captures what {@code work} issues on {@code stream} again and applies it to {@code graph}
	 * ({@link GraphCapture#endAndUpdate(GpuGraph)}), for new scalar arguments or other buffers.
	 */
	default GraphUpdate update(GpuGraph graph, GpuStream stream, Runnable work) {
		Objects.requireNonNull(graph, "graph");
		Objects.requireNonNull(work, "work");
		try (GraphCapture capture = beginCapture(graph.name(), stream)) {
			work.run();
			return capture.endAndUpdate(graph);
		}
	}

	/**
	 * A new cache of graphs by key, holding at most {@link #defaultCacheSize()} of them (see
	 * {@link GraphCache}). The caller closes it, which closes its graphs; the context closes it at the
	 * latest.
	 * @param name names its graphs (metrics, the endpoint)
	 */
	default <K> GraphCache<K> cache(String name) {
		return cache(name, defaultCacheSize());
	}

	/**
	 * A new cache of graphs by key holding at most {@code maxSize} of them; past that, capturing a
	 * new key closes the graph used least recently.
	 * @throws IllegalArgumentException when {@code maxSize} is below 1
	 */
	<K> GraphCache<K> cache(String name, int maxSize);

	/** The size {@link #cache(String)} gives a cache ({@link dev.gpucompute.settings.GraphSettings#DEFAULT_CACHE_SIZE} unless configured). */
	int defaultCacheSize();

	/**
	 * These graphs with another {@link #defaultCacheSize()} (the starter's {@code gpu.graphs.cache-size}):
	 * a view of the same graphs, nothing else changes.
	 * @throws IllegalArgumentException when {@code maxSize} is below 1
	 */
	GpuGraphs withDefaultCacheSize(int maxSize);

	/** The open caches of this context, oldest first; a snapshot. */
	List<GraphCache<?>> caches();

	/** The live graphs of this context, oldest first; a snapshot. */
	List<GraphInfo> graphs();

	/** Counts since the context opened. */
	GraphStats stats();

	/**
	 * Implemented by the contexts the runtime opens, so that {@link #of(GpuContext)} finds their
	 * graphs. Not for applications.
	 */
	interface Host {

		/** The graphs of this context. */
		GpuGraphs graphs();

	}

}
