package dev.gpucompute.autoconfigure;

import java.time.Duration;
import java.util.List;

import dev.gpucompute.batch.GpuBatcher;

/**
 * Closes several batchers within one timeout, so that they drain in parallel: every one stops
 * accepting first ({@link GpuBatcher#shutdown()}), then each is waited for until the common deadline,
 * then what is left is abandoned ({@link GpuBatcher#shutdownNow()}). What the runtime does for the
 * batchers of one context when it closes; the starter does it for every device at once. Stateless.
 */
final class BatcherShutdown {

	private BatcherShutdown() {
	}

	/** @return whether every batcher finished its items in time (nothing abandoned) */
	static boolean closeWithin(List<GpuBatcher<?, ?>> batchers, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		for (GpuBatcher<?, ?> batcher : batchers) {
			batcher.shutdown();
		}
		boolean clean = true;
		for (GpuBatcher<?, ?> batcher : batchers) {
			boolean done = batcher.awaitTermination(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
			clean &= done & batcher.shutdownNow() == 0;
		}
		return clean;
	}

}
