/**
 * The memory room (not API): device buffers ({@code BufferHandle}), host buffers
 * ({@code HostBufferHandle}), {@code Memory} (the room's front door: allocation, launch arguments,
 * close), the copy pipeline and its chunked copies, the staging pool and its budget.
 */
@NullMarked
package dev.gpucompute.internal.memory;

import org.jspecify.annotations.NullMarked;
