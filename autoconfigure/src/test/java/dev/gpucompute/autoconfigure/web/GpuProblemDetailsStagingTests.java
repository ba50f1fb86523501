package dev.gpucompute.autoconfigure.web;

import java.time.Duration;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.Test;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;

import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.autoconfigure.web.GpuProblemDetails.GpuProblem;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A copy that found no staging within the staging timeout is a busy GPU, as an exhausted stream
 * pool is: 503 with {@code Retry-After}, saying nothing of the sizes in the exception's message.
 */
class GpuProblemDetailsStagingTests {

	@Test
	void exhaustedStagingIs503WithRetryAfter() {
		StagingExhaustedException exhausted = new StagingExhaustedException(Duration.ofSeconds(30), 4 << 20, 1 << 30,
				1 << 30, 3);
		GpuProblem problem = new GpuProblemDetails(Duration.ofMillis(1500)).problemFor(new CompletionException(exhausted));
		assertThat(problem.failure()).isSameAs(exhausted);
		assertThat(problem.body().getStatus()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE.value());
		assertThat(problem.body().getType().toString()).isEqualTo("urn:gpu-compute:problem:staging-exhausted");
		assertThat(problem.body().getTitle()).isEqualTo("GPU busy");
		assertThat(problem.body().getDetail()).isEqualTo("Every GPU copy buffer is in use; retry later.");
		assertThat(problem.headers().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("2");
		assertThat(problem.isServerFault()).isFalse();
	}

}
