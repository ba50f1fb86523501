package dev.gpucompute.graph;

/**
 * The graphs of one context, counted since it opened ({@link GpuGraphs#stats()}).
 *
 * @param live graphs not closed yet
 * @param captured captures that produced a graph (new graphs and updates)
 * @param failedCaptures captures ended without a graph: an operation refused, a stream not joined,
 * a capture closed without {@code end()}
 * @param replays launches of graphs
 * @param updatesInPlace updates applied in place
 * @param reinstantiations updates the backend refused, instantiated anew instead
 * @param nodes operations in the live graphs, all together
 */
public record GraphStats(int live, long captured, long failedCaptures, long replays, long updatesInPlace,
		long reinstantiations, long nodes) {
}
