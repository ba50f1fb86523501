package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;

import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.BackendConfig;

class CpuEventTest {

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
