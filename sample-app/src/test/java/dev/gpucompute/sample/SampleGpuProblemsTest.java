package dev.gpucompute.sample;

import java.time.Duration;
import java.util.concurrent.CompletionException;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.autoconfigure.web.GpuExceptionHandler;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter's GPU problem details are present in the sample, and the sample's own advice
 * ({@code ProblemDetailsAdvice}) still answers GPU failures in the service's format: an
 * application's handlers win over the starter's.
 */
@Import(SampleGpuProblemsTest.FailingController.class)
class SampleGpuProblemsTest extends RunningAppTests {

	@Autowired
	private ApplicationContext applicationContext;

	@Test
	void theSamplesOwnAdviceAnswersGpuFailures() {
		assertThat(this.applicationContext.getBeansOfType(GpuExceptionHandler.class)).hasSize(1);
		Http.Response busy = this.http.get("/test/pool-exhausted");
		assertThat(busy.status()).isEqualTo(503);
		assertThat(busy.json().get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:busy");
		Http.Response kernel = this.http.get("/test/kernel-failed");
		assertThat(kernel.status()).isEqualTo(500);
		assertThat(kernel.json().get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:gpu-failure");
		// The sample's catch-all for Exception takes a wrapped failure before the starter's handler can unwrap it.
		Http.Response wrapped = this.http.get("/test/wrapped");
		assertThat(wrapped.status()).isEqualTo(500);
		assertThat(wrapped.json().get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:internal-error");
	}

	/**
	 * A copy that found no staging memory within gpu.copies.staging-timeout is a busy GPU like an
	 * exhausted stream pool (retrying later helps), not a GPU failure: 503 busy, not 500.
	 */
	@Test
	void exhaustedStagingIsABusyGpu() {
		Http.Response busy = this.http.get("/test/staging-exhausted");
		assertThat(busy.status()).isEqualTo(503);
		assertThat(busy.json().get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:busy");
		assertThat(busy.json().get("detail").asString()).startsWith("Staging memory exhausted");
	}

	@RestController
	static class FailingController {

		@GetMapping("/test/staging-exhausted")
		String stagingExhausted() {
			throw new StagingExhaustedException(Duration.ofMillis(5), 2 << 20, 4 << 20, 4 << 20, 1);
		}

		@GetMapping("/test/pool-exhausted")
		String poolExhausted() {
			throw new PoolExhaustedException(Duration.ofMillis(5), 8, 8, 0);
		}

		@GetMapping("/test/kernel-failed")
		String kernelFailed() {
			throw new KernelLaunchException("knn_score", "pool-1", "illegal address", null);
		}

		@GetMapping("/test/wrapped")
		String wrapped() {
			throw new CompletionException(new PoolExhaustedException(Duration.ofMillis(5), 8, 8, 0));
		}

	}

}
