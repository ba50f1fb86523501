package dev.gpucompute.batch;

import java.time.Duration;

import dev.gpucompute.GpuException;

/**
 * A {@link GpuBatcher}'s queue was full: the item was refused at once and never queued. Carries a
 * hint of when to retry (the time the batcher needs to work through its queue at its recent rate),
 * for an HTTP {@code 503} with {@code Retry-After}.
 */
public class BatchQueueFullException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final String batcher;

	private final int maxQueued;

	private final transient Duration retryAfter;

	public BatchQueueFullException(String batcher, int maxQueued, Duration retryAfter) {
		super("Batcher '" + batcher + "' is full: " + maxQueued + " items are queued (its max-queued); retry after "
				+ retryAfter.toMillis() + " ms");
		this.batcher = batcher;
		this.maxQueued = maxQueued;
		this.retryAfter = retryAfter;
	}

	/** The batcher that refused the item. */
	public String batcher() {
		return this.batcher;
	}

	/** The most items its queue holds. */
	public int maxQueued() {
		return this.maxQueued;
	}

	/** When a retry is likely to be accepted; at least one millisecond. */
	public Duration retryAfter() {
		return this.retryAfter;
	}

}
