package dev.gpucompute.sample.web;

import org.springframework.http.HttpHeaders;

import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.autoconfigure.web.GpuProblemCustomizer;
import dev.gpucompute.autoconfigure.web.GpuProblemDetails.GpuProblem;
import dev.gpucompute.batch.BatchQueueFullException;

/**
 * What this service adds to the starter's answers to GPU failures (their status, type, title and
 * detail stay the starter's): a full search queue asks clients to come back when the batcher
 * expects room ({@link BatchQueueFullException#retryAfter()}, not the fixed
 * {@code gpu.problem-details.retry-after}); every answer with {@code Retry-After} carries the same
 * whole seconds as a {@code retryAfterSeconds} member, for clients that read the body only (the
 * service's answers to a full or timed-out search queue always had it); a pool too small names its
 * setting as {@code setting}.
 * Stateless, so thread-safe.
 */
final class SampleGpuProblems implements GpuProblemCustomizer {

	@Override
	public void customize(GpuProblem problem) {
		if (problem.failure() instanceof BatchQueueFullException full) {
			problem.setRetryAfter(full.retryAfter());
		}
		if (problem.failure() instanceof PoolTooSmallException tooSmall) {
			problem.body().setProperty("setting", tooSmall.property());
		}
		String retryAfter = problem.headers().getFirst(HttpHeaders.RETRY_AFTER);
		if (retryAfter != null) {
			problem.body().setProperty("retryAfterSeconds", Long.parseLong(retryAfter));
		}
	}

}
