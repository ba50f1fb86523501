package dev.gpucompute;

import java.time.Duration;

/**
 * An array or buffer copy found no room in its context's staging budget
 * ({@link GpuContextBuilder#stagingBudget(long)}) within the staging timeout: the page-locked
 * memory copies stage through was held by other copies all that time. Nothing of the copy was
 * enqueued and it holds nothing. Like {@link PoolExhaustedException}, a sign of a busy GPU: retry
 * later, raise the budget or the timeout, or copy large data through a {@link HostBuffer}, which
 * needs no staging.
 */
public class StagingExhaustedException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final long requestedBytes;

	private final long budgetBytes;

	public StagingExhaustedException(Duration waited, long requestedBytes, long usedBytes, long budgetBytes,
			int othersWaiting) {
		super("Staging memory exhausted: no room for " + requestedBytes + " bytes after " + waited.toMillis()
				+ " ms (in use " + usedBytes + " of a budget of " + budgetBytes + " bytes, " + othersWaiting
				+ " other copies waiting). Copies from arrays and buffers stage through page-locked memory that other "
				+ "copies held all that time: raise gpu.copies.staging-budget or gpu.copies.staging-timeout, or copy "
				+ "large data through a HostBuffer (no staging).");
		this.requestedBytes = requestedBytes;
		this.budgetBytes = budgetBytes;
	}

	/** The staging the copy waited for. */
	public long requestedBytes() {
		return this.requestedBytes;
	}

	/** The context's staging budget. */
	public long budgetBytes() {
		return this.budgetBytes;
	}

}
