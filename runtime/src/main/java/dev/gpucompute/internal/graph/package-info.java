/**
 * The graph room (not API): the implementations of {@code GpuGraph}, {@code GraphCapture} and
 * {@code GraphCache}, and the state of each instantiated graph that the context and the leak cleaner
 * release.
 */
@NullMarked
package dev.gpucompute.internal.graph;

import org.jspecify.annotations.NullMarked;
