package dev.gpucompute.autoconfigure.web;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;

import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.web.GpuProblemDetails.GpuProblem;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.GpuBatcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The failures of a real {@link GpuBatcher} (CPU backend) answered as problem details: a full queue
 * and an item that waited past its timeout are 503 with {@code Retry-After}, as an exhausted pool is.
 */
class GpuProblemDetailsBatcherTests {

	private final GpuProblemDetails details = new GpuProblemDetails(Duration.ofSeconds(2));

	@Test
	void aFullBatchQueueAndAQueueTimeoutAre503WithRetryAfter() throws Exception {
		CountDownLatch running = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		try (GpuContext context = GpuContext.builder().backend(dev.gpucompute.Backend.CPU).cpuThreads(1).open();
				GpuBatcher<Integer, Integer> batcher = GpuBatcher.<Integer, Integer>builder(context, (batch) -> {
					running.countDown();
					release.await(30, TimeUnit.SECONDS);
					return batch.items();
				}).name("held").maxQueued(1).build()) {
			CompletableFuture<Integer> first = batcher.submit(1);
			assertThat(running.await(30, TimeUnit.SECONDS)).as("the first batch runs and holds its stream").isTrue();
			CompletableFuture<Integer> expiring = batcher.submit(2, Duration.ofMillis(1));
			Throwable expired = catchThrowable(expiring::join);
			GpuProblem timeout = this.details.problemFor(expired);
			assertThat(timeout).as("%s", expired).isNotNull();
			assertThat(timeout.body().getStatus()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE.value());
			assertThat(timeout.body().getType().toString()).isEqualTo("urn:gpu-compute:problem:batch-timeout");
			assertThat(timeout.headers().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("2");
			// The expired item left the queue: one more fits, the next is refused at once.
			CompletableFuture<Integer> queued = batcher.submit(4);
			Throwable full = catchThrowable(() -> batcher.submit(5));
			assertThat(full).isInstanceOf(BatchQueueFullException.class);
			GpuProblem busy = this.details.problemFor(full);
			assertThat(busy.body().getStatus()).isEqualTo(HttpStatus.SERVICE_UNAVAILABLE.value());
			assertThat(busy.body().getType().toString()).isEqualTo("urn:gpu-compute:problem:batch-queue-full");
			assertThat(busy.body().getTitle()).isEqualTo("GPU busy");
			assertThat(busy.headers().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("2");
			release.countDown();
			assertThat(List.of(first.get(30, TimeUnit.SECONDS), queued.get(30, TimeUnit.SECONDS))).containsExactly(1, 4);
		}
	}

}
