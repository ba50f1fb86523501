/**
 * The batch room (not API): {@code Batcher}, the implementation of {@code GpuBatcher}, with its
 * queue and deadlines, admission, the pacing of batches, the dispatch threads and the runner that
 * leases a stream and calls the handler, the drain at close, and the sweep timer. It uses its context
 * through the API (leases, stream scopes) and the core room for lifecycle and completions.
 */
@NullMarked
package dev.gpucompute.internal.batch;

import org.jspecify.annotations.NullMarked;
