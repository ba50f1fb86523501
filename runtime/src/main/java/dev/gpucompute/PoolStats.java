package dev.gpucompute;

import java.util.List;

/**
 * A snapshot of the {@link StreamPool}.
 *
 * @param size streams that exist now (idle + leased)
 * @param active leased streams
 * @param idle streams waiting in the pool
 * @param pending threads waiting for a lease
 * @param minSize streams created up front ({@code pool-size})
 * @param maxSize most streams the pool will create ({@code max-size})
 * @param created streams created since open
 * @param destroyed streams destroyed since open
 * @param acquisitions leases granted since open
 * @param timeouts acquisitions that gave up
 * @param highWaterMark most streams leased at once
 * @param leaksDetected leases reported as held past the leak-detection threshold
 * @param utilization average over pooled streams of the fraction of recent time they had work
 * in flight (0..1)
 * @param streams per-stream figures
 */
public record PoolStats(int size, int active, int idle, int pending, int minSize, int maxSize, long created,
		long destroyed, long acquisitions, long timeouts, int highWaterMark, long leaksDetected, double utilization,
		List<StreamStats> streams) {

	/**
	 * One pooled stream.
	 *
	 * @param name the stream's name
	 * @param priority its priority
	 * @param leased whether it is leased now
	 * @param leases how often it was leased
	 * @param heldNanos total time it was leased
	 * @param busyShare fraction of recent time it had work in flight (0..1)
	 */
	public record StreamStats(String name, StreamPriority priority, boolean leased, long leases, long heldNanos,
			double busyShare) {
	}

}
