/**
 * Graphs: work captured once from a stream and replayed with one call ({@link dev.gpucompute.graph.GpuGraphs},
 * {@link dev.gpucompute.graph.GraphCapture}, {@link dev.gpucompute.graph.GpuGraph},
 * {@link dev.gpucompute.graph.GraphCache}). CUDA graphs on CUDA; on the CPU backend, the recorded
 * operations, replayed with the same ordering, failure and ownership rules. Part of the public API;
 * depends only on {@code dev.gpucompute}.
 */
@NullMarked
package dev.gpucompute.graph;

import org.jspecify.annotations.NullMarked;
