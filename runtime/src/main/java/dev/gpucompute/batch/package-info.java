/**
 * Dynamic batching: many small concurrent requests become few full kernel launches, each batch on
 * a leased stream. {@link dev.gpucompute.batch.GpuBatcher} queues items and hands batches to a
 * {@link dev.gpucompute.batch.BatchHandler}, with back-pressure
 * ({@link dev.gpucompute.batch.BatchQueueFullException}), deadlines
 * ({@link dev.gpucompute.batch.BatchTimeoutException}) and its settings in
 * {@link dev.gpucompute.batch.GpuBatcher.Settings}. Builds on the API of {@code dev.gpucompute}
 * (contexts, leases, stream scopes), which does not depend on this package.
 */
@NullMarked
package dev.gpucompute.batch;

import org.jspecify.annotations.NullMarked;
