package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * Close while the copy threads are busy: a task they never started (the unpack of a download's
 * chunk, queued behind one that does not end) still runs, so the download's future completes (here
 * with the failure of the chunk close interrupted) rather than waiting for ever. Close gives the copy threads 5 s and then stops them; the test takes that long.
 */
class CopyThreadsCloseTests {

	@Test
	void aDownloadWhoseChunkWaitsForABusyCopyThreadAtCloseStillCompletes() throws Exception {
		CopyFaultInjection faults = new CopyFaultInjection();
		GpuContext context = faults.open(GpuContext.builder().backend(Backend.CPU).cpuThreads(2).copyThreads(1)
			.copyChunkSize(4096).drainTimeout(Duration.ofSeconds(10)));
		CountDownLatch reached = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		CompletableFuture<Void> download;
		try {
			DeviceBuffer buffer = context.launcher().allocate(2048, ElementType.FLOAT);
			buffer.fill((byte) 0);
			// Chunk 0's unpack holds the one copy thread; chunk 1's waits in its queue.
			faults.pauseAt("UNPACK", 0, reached, release);
			download = buffer.download(HostArray.of(new float[2048]));
			assertThat(reached.await(10, TimeUnit.SECONDS)).as("chunk 0 is being unpacked").isTrue();
		}
		finally {
			context.close();
			release.countDown();
		}
		// Close interrupts the unpack that did not end (chunk 0 fails); the queued one still runs.
		assertThat(download.handle((result, failure) -> String.valueOf(failure)))
			.as("the download's future after close").succeedsWithin(Duration.ofSeconds(10))
			.asString().contains("Copying chunk 0 of a download of 8192 bytes into host memory failed");
	}

}
