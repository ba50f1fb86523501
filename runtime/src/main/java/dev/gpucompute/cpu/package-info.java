/**
 * The CPU backend: a real executor with the same stream and event semantics as CUDA. Streams are
 * ordered queues of operations served by one shared worker pool, events are completion markers
 * that other streams wait on without occupying a worker, a kernel's Java implementation runs once
 * per block with blocks spread over the workers, and device buffers are off-heap memory.
 */
@NullMarked
package dev.gpucompute.cpu;

import org.jspecify.annotations.NullMarked;
