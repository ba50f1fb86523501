package dev.gpucompute.sample.search;

import java.time.Duration;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * Admission control in front of the stream pool. A stream-parallel group leases its streams one by
 * one, so two searches that each hold half of the pool while waiting for the other half would
 * starve each other until the pool's acquire timeout. Taking all the permits a search needs at once
 * (a fair semaphore hands out the whole batch or nothing) rules that out: while this service is the
 * pool's only user, a search that got its permits always gets its streams.
 *
 * <p>Thread-safe.
 */
public final class StreamPermits {

	private final Semaphore permits;

	private final int total;

	private final Duration timeout;

	/**
	 * @param total permits, at most the pool's maximum size
	 * @param timeout longest wait before a request is answered "busy" (503)
	 */
	public StreamPermits(int total, Duration timeout) {
		if (total < 1) {
			throw new IllegalArgumentException("At least one stream permit is needed, got " + total);
		}
		this.permits = new Semaphore(total, true);
		this.total = total;
		this.timeout = timeout;
	}

	/**
	 * Takes {@code count} permits at once.
	 * @throws ServiceProblem (503) when they were not free within the timeout
	 */
	public void acquire(int count) {
		try {
			if (!this.permits.tryAcquire(count, this.timeout.toNanos(), TimeUnit.NANOSECONDS)) {
				throw ServiceProblem.busy(count, this.timeout);
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw ServiceProblem.busy(count, this.timeout);
		}
	}

	public void release(int count) {
		this.permits.release(count);
	}

	/** All permits; the most streams one search may use. */
	public int total() {
		return this.total;
	}

	/** Permits free now. */
	public int available() {
		return this.permits.availablePermits();
	}

}
