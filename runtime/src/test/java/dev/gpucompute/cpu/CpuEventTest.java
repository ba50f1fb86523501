package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;

import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.BackendConfig;

class CpuEventTest {

	@Test
	void workQueuedBehindARunningTaskAtCloseIsDroppedWithoutStartingItAll() throws Exception {
		CpuDeviceBackend backend = new CpuDeviceBackend(new BackendConfig(0, 1, 1 << 20, 0, List.of(), (Path) null));
		CpuStream stream = (CpuStream) backend.createStream(StreamPriority.NORMAL, "s");
		CountDownLatch running = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		AtomicLong ran = new AtomicLong();
		stream.enqueueTask(() -> {
			running.countDown();
			try {
				release.await();
			}
			catch (InterruptedException ex) {
				// shutdownNow interrupts the worker; the task then ends
			}
		});
		for (int i = 0; i < 100_000; i++) {
			stream.enqueueTask(ran::incrementAndGet);
		}
		running.await();
		backend.close();
		release.countDown();
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		while (backend.droppedAfterClose() == 0 && System.nanoTime() < deadline) {
			Thread.sleep(5);
		}
		// Only the first operation behind the running one tries to start; the rest never do.
		assertThat(backend.droppedAfterClose()).isEqualTo(1);
		assertThat(ran).hasValue(0);
	}

	@Test
	void timingStampIsTakenBeforeTheNextOperationStarts() {
		CpuDeviceBackend backend = new CpuDeviceBackend(
				new BackendConfig(0, 2, 1 << 20, 0, List.of(), (Path) null));
		try {
			CpuStream stream = (CpuStream) backend.createStream(StreamPriority.NORMAL, "s");
			CompletableFuture<Void> gate = new CompletableFuture<>();
			stream.enqueue((done) -> gate.thenRun(() -> stream.finish(done, null)));
			CpuEvent event = new CpuEvent(true);
			event.record(stream);
			AtomicLong nextStarted = new AtomicLong();
			stream.enqueue((done) -> {
				nextStarted.set(System.nanoTime());
				LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
				stream.finish(done, null);
			});
			// Completing the gate here runs the queued stages on this thread, in the order CompletableFuture picks.
			gate.complete(null);
			stream.synchronize();
			assertThat(event.completedAtNanos()).isPositive().isLessThanOrEqualTo(nextStarted.get());
		}
		finally {
			backend.close();
		}
	}

}
