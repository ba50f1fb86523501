package dev.gpucompute.graph;

/**
 * A snapshot of one graph: what it holds and how it was used.
 *
 * @param name the name it was captured under
 * @param nodes operations in the graph (kernel launches, copies, fills)
 * @param replays launches so far ({@link GpuGraph#launch} and {@link GpuGraph#replay})
 * @param updatesInPlace captures applied in place ({@link GraphUpdate#UPDATED_IN_PLACE})
 * @param reinstantiations captures that replaced it by a new instantiation ({@link GraphUpdate#REINSTANTIATED})
 * @param captureNanos how long its latest capture took (from begin to end, the work issued included)
 * @param instantiateNanos how long its latest instantiation or update took
 * @param thread the name of the thread that captured it first
 */
public record GraphInfo(String name, int nodes, long replays, long updatesInPlace, long reinstantiations,
		long captureNanos, long instantiateNanos, String thread) {
}
