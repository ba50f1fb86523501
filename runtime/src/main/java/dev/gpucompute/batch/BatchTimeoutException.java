package dev.gpucompute.batch;

import java.time.Duration;

import dev.gpucompute.GpuException;

/**
 * An item of a {@link GpuBatcher} waited in the queue past its deadline (the batcher's
 * {@code timeout}, or the shorter one given at submit): its future completes exceptionally with
 * this, and the item is never run. A deadline bounds the wait in the queue only; an item already
 * handed to its batch's handler runs to the end.
 */
public class BatchTimeoutException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final transient Duration waited;

	public BatchTimeoutException(String batcher, Duration waited) {
		super("Item of batcher '" + batcher + "' timed out after waiting " + waited.toMillis()
				+ " ms in the queue; it was not run");
		this.waited = waited;
	}

	/** How long the item waited before it timed out. */
	public Duration waited() {
		return this.waited;
	}

}
