package dev.gpucompute.internal.stream;

/**
 * What a pooled stream's handle needs of its lease: whether the lease is closed (the handle is then
 * unusable), and whether the pool destroyed the stream (a thread other than its owner must not reach
 * it then). Implemented by the pool's lease; kept small so that the stream room knows nothing of the
 * pool.
 */
public interface LeaseState {

	boolean isClosed();

	/** Whether the pool destroyed the stream (its context closed, or it was evicted). */
	boolean streamDestroyed();

}
