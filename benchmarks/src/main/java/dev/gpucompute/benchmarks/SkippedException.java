package dev.gpucompute.benchmarks;

/**
 * Ends a benchmark's setup when it cannot run here (no CUDA device). JMH reports it as the
 * benchmark's failure and goes on with the next one; the message says why, and there is no stack
 * trace to scroll past.
 */
final class SkippedException extends RuntimeException {

	SkippedException(String message) {
		super(message, null, false, false);
	}

}
