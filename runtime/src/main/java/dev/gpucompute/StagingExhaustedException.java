package dev.gpucompute;

import java.time.Duration;

/**
 * An array or buffer copy waited for staging memory longer than the staging timeout
 * ({@link GpuContextBuilder#stagingTimeout(java.time.Duration)}). Either it found no room in its
 * context's staging budget ({@link GpuContextBuilder#stagingBudget(long)}): the page-locked memory
 * copies stage through was held by other copies all that time, and nothing of the copy was
 * enqueued. Or, for a copy larger than the few staging blocks it holds, none of its own blocks came
 * back within the timeout: its stream had not passed the chunks it had enqueued (earlier work on the
 * stream held it), so the copy stopped there; those chunks end on the stream and their staging goes
 * back once the stream has passed them, and the destination range has unspecified contents. Either
 * way the call threw before it returned a future, and the copy holds no staging once the stream has
 * passed what it enqueued. Like {@link PoolExhaustedException}, a sign of a busy GPU: retry later,
 * raise the budget or the timeout, or copy large data through a {@link HostBuffer}, which needs no
 * staging and never waits for it.
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

	/**
	 * A copy that waited for staging with a reason of its own ({@code message}), such as a chunked
	 * copy whose own blocks did not come back from its stream in time.
	 * @param message what the copy waited for and what to do
	 * @param requestedBytes the staging the copy waited for
	 * @param budgetBytes the context's staging budget
	 */
	public StagingExhaustedException(String message, long requestedBytes, long budgetBytes) {
		super(message);
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
