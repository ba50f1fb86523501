package dev.gpucompute.sample;

import java.time.Duration;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import tools.jackson.databind.JsonNode;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpHeaders;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.autoconfigure.web.GpuProblemDetails;
import dev.gpucompute.autoconfigure.web.GpuProblemDetails.GpuProblem;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.BatchTimeoutException;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * GPU failures that reach the sample's advice ({@code ProblemDetailsAdvice}, whose catch-all Spring
 * asks before the starter's handler) are answered by the starter: each answer is the one the
 * starter's {@link GpuProblemDetails} gives for the same failure (its status, type, title, detail
 * and {@code Retry-After}), with what the sample adds ({@code SampleGpuProblems}): the batcher's own
 * retry estimate for a full queue, {@code retryAfterSeconds}, and {@code setting} for a pool too
 * small. The sample's own problems keep the sample's types.
 */
@Import(SampleGpuProblemsTests.FailingController.class)
@ExtendWith(QuietOutputExtension.class)
class SampleGpuProblemsTests extends RunningAppFixture {

	private static final String STARTER = "urn:gpu-compute:problem:";

	@Autowired
	private GpuProblemDetails starter;

	@Test
	void aBusyGpuIsTheStarters503WithRetryAfter() {
		Http.Response pool = assertStarters("/test/pool-exhausted", FailingController.POOL_EXHAUSTED, 503,
				"pool-exhausted");
		assertThat(pool.header(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
		assertThat(pool.json().get("retryAfterSeconds").asLong()).isEqualTo(1);
		// A copy that found no staging memory in time is a busy GPU too, not a GPU failure.
		assertStarters("/test/staging-exhausted", FailingController.STAGING_EXHAUSTED, 503, "staging-exhausted");
		assertStarters("/test/batch-timeout", FailingController.BATCH_TIMEOUT, 503, "batch-timeout");
		assertStarters("/test/context-closed", FailingController.CONTEXT_CLOSED, 503, "unavailable");
	}

	@Test
	void aFullSearchQueueAsksToComeBackWhenTheBatcherExpectsRoom() {
		// The batcher expects room in 2.2 s: 3 whole seconds, not gpu.problem-details.retry-after's 1.
		Http.Response full = assertStarters("/test/batch-queue-full", FailingController.BATCH_QUEUE_FULL, 503,
				"batch-queue-full");
		assertThat(full.header(HttpHeaders.RETRY_AFTER)).isEqualTo("3");
		assertThat(full.json().get("retryAfterSeconds").asLong()).isEqualTo(3);
	}

	@Test
	void aPoolTooSmallIsTheStarters500NamingTheSetting() {
		JsonNode problem = assertStarters("/test/pool-too-small", FailingController.POOL_TOO_SMALL, 500,
				"pool-too-small").json();
		assertThat(problem.get("setting").asString()).isEqualTo("gpu.streams.max-size");
		assertThat(problem.get("detail").asString()).contains("gpu.streams.max-size");
		assertThat(problem.has("retryAfterSeconds")).isFalse();
	}

	@Test
	void failedKernelsAndOtherGpuFailuresAreTheStarters500() {
		JsonNode kernel = assertStarters("/test/kernel-failed", FailingController.KERNEL_FAILED, 500, "kernel-failed")
			.json();
		assertThat(kernel.get("kernel").asString()).isEqualTo("knn_score");
		assertStarters("/test/gpu-failure", FailingController.GPU_FAILURE, 500, "gpu-failure");
	}

	@Test
	void aWrappedGpuFailureIsUnwrapped() {
		// The sample's catch-all used to answer this 500 internal-error: now the starter unwraps it.
		assertStarters("/test/wrapped", FailingController.POOL_EXHAUSTED, 503, "pool-exhausted");
	}

	@Test
	void otherFailuresKeepTheSamplesOwnAnswer() {
		for (String path : new String[] { "/test/not-gpu", "/test/wrapped-not-gpu" }) {
			Http.Response response = this.http.get(path);
			assertThat(response.status()).as(path).isEqualTo(500);
			assertThat(response.contentType()).isEqualTo("application/problem+json");
			assertThat(response.json().get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:internal-error");
			assertThat(response.header(HttpHeaders.RETRY_AFTER)).isNull();
		}
	}

	/**
	 * Asserts that {@code path} is answered as the starter answers {@code failure}: status, type,
	 * title, detail and {@code Retry-After}, with the request path as {@code instance}.
	 * @return the response, for what the sample adds
	 */
	private Http.Response assertStarters(String path, GpuException failure, int status, String type) {
		GpuProblem expected = this.starter.problemFor(failure);
		Http.Response response = this.http.get(path);
		assertThat(response.status()).as(path).isEqualTo(status);
		assertThat(response.contentType()).isEqualTo("application/problem+json");
		JsonNode body = response.json();
		assertThat(body.get("type").asString()).isEqualTo(STARTER + type)
			.isEqualTo(expected.body().getType().toString());
		assertThat(body.get("status").asInt()).isEqualTo(expected.body().getStatus());
		assertThat(body.get("title").asString()).isEqualTo(expected.body().getTitle());
		assertThat(body.get("detail").asString()).isEqualTo(expected.body().getDetail());
		assertThat(body.get("instance").asString()).isEqualTo(path);
		assertThat(response.header(HttpHeaders.RETRY_AFTER))
			.isEqualTo(expected.headers().getFirst(HttpHeaders.RETRY_AFTER));
		return response;
	}

	@RestController
	static class FailingController {

		static final PoolExhaustedException POOL_EXHAUSTED = new PoolExhaustedException(Duration.ofMillis(5), 8, 8, 0);

		static final StagingExhaustedException STAGING_EXHAUSTED = new StagingExhaustedException(Duration.ofMillis(5),
				2 << 20, 4 << 20, 4 << 20, 1);

		static final BatchQueueFullException BATCH_QUEUE_FULL = new BatchQueueFullException("search", 2,
				Duration.ofMillis(2200));

		static final BatchTimeoutException BATCH_TIMEOUT = new BatchTimeoutException("search", Duration.ofMillis(50));

		static final ContextClosedException CONTEXT_CLOSED = new ContextClosedException("GpuContext is closed");

		static final PoolTooSmallException POOL_TOO_SMALL = new PoolTooSmallException(2, 1, StreamPriority.NORMAL,
				false);

		static final KernelLaunchException KERNEL_FAILED = new KernelLaunchException("knn_score", "pool-1",
				"illegal address", null);

		static final GpuException GPU_FAILURE = new GpuException("cuMemcpyDtoH failed: CUDA_ERROR_UNKNOWN");

		@GetMapping("/test/pool-exhausted")
		String poolExhausted() {
			throw POOL_EXHAUSTED;
		}

		@GetMapping("/test/staging-exhausted")
		String stagingExhausted() {
			throw STAGING_EXHAUSTED;
		}

		@GetMapping("/test/batch-queue-full")
		String batchQueueFull() {
			throw BATCH_QUEUE_FULL;
		}

		@GetMapping("/test/batch-timeout")
		String batchTimeout() {
			throw BATCH_TIMEOUT;
		}

		@GetMapping("/test/context-closed")
		String contextClosed() {
			throw CONTEXT_CLOSED;
		}

		@GetMapping("/test/pool-too-small")
		String poolTooSmall() {
			throw POOL_TOO_SMALL;
		}

		@GetMapping("/test/kernel-failed")
		String kernelFailed() {
			throw KERNEL_FAILED;
		}

		@GetMapping("/test/gpu-failure")
		String gpuFailure() {
			throw GPU_FAILURE;
		}

		@GetMapping("/test/wrapped")
		String wrapped() {
			throw new CompletionException(POOL_EXHAUSTED);
		}

		@GetMapping("/test/not-gpu")
		String notGpu() {
			throw new IllegalStateException("a failure that is not the GPU's");
		}

		@GetMapping("/test/wrapped-not-gpu")
		String wrappedNotGpu() {
			throw new CompletionException(new IllegalStateException("a failure that is not the GPU's"));
		}

	}

}
