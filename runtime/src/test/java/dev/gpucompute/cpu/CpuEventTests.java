package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.spi.NativeCapture;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

class CpuEventTests {

	@Test
	void workQueuedBehindARunningTaskAtCloseIsAbandonedWithoutStartingAnyOfIt() throws Exception {
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
		CompletableFuture<GpuException> callback = new CompletableFuture<>();
		stream.whenDone(callback::complete);
		CompletableFuture<Throwable> blocked = CompletableFuture.supplyAsync(() -> {
			try {
				stream.synchronize();
				return null;
			}
			catch (Throwable ex) {
				return ex;
			}
		});
		running.await();
		backend.close();
		release.countDown();
		// The queue is dropped at once (no chain of 100,000 operations failing one after another), the
		// waiting callback and the blocked synchronisation both end with the abandonment.
		assertThat(callback.get(5, TimeUnit.SECONDS)).isInstanceOf(ContextClosedException.class)
			.hasMessageContaining("abandoned at close");
		assertThat(blocked.get(5, TimeUnit.SECONDS)).isInstanceOf(ContextClosedException.class);
		assertThat(ran).hasValue(0);
		assertThat(backend.droppedAfterClose()).isZero();
	}

	@Test
	void timingStampIsTakenBeforeTheNextOperationStarts() {
		CpuDeviceBackend backend = new CpuDeviceBackend(
				new BackendConfig(0, 2, 1 << 20, 0, List.of(), (Path) null));
		try {
			CpuStream stream = (CpuStream) backend.createStream(StreamPriority.NORMAL, "s");
			CompletableFuture<Void> gate = new CompletableFuture<>();
			stream.enqueue(new CpuStream.Op() {
				@Override
				boolean start(CpuStream target) {
					gate.thenRun(() -> target.finish(this, null));
					return false;
				}
			});
			CpuEvent event = new CpuEvent(true);
			event.record(stream);
			long busy = TimeUnit.MILLISECONDS.toNanos(5);
			stream.enqueue(new CpuStream.Op() {
				@Override
				boolean start(CpuStream target) {
					long started = System.nanoTime();
					while (System.nanoTime() - started < busy) {
						Thread.onSpinWait();
					}
					return true;
				}
			});
			CpuEvent after = new CpuEvent(true);
			after.record(stream);
			// Completing the gate here finishes the first operation on this thread, which then starts the rest.
			gate.complete(null);
			stream.synchronize();
			// The span between the two events holds the whole 5 ms operation only if the first stamp was
			// taken before that operation started (a stamp taken once the rest ran would shorten it).
			assertThat(after.elapsedMillisSince(event)).isGreaterThanOrEqualTo(5f);
		}
		finally {
			backend.close();
		}
	}

	@Test
	void awaitIdleReturnsOnlyOnceTheCallbacksOfTheFinishedWorkHaveRun() throws Exception {
		// The SPI's contract (DeviceBackend#awaitIdle): the context's close abandons every completion still
		// pending once awaitIdle returns, so the callbacks of finished work must have run by then.
		CpuDeviceBackend backend = new CpuDeviceBackend(new BackendConfig(0, 2, 1 << 20, 0, List.of(), (Path) null));
		try {
			CpuStream stream = (CpuStream) backend.createStream(StreamPriority.NORMAL, "s");
			stream.enqueueTask(() -> LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20)));
			AtomicLong callbackEnded = new AtomicLong();
			stream.whenDone((failure) -> {
				LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
				callbackEnded.set(System.nanoTime());
			});
			assertThat(backend.awaitIdle(TimeUnit.SECONDS.toNanos(10))).isTrue();
			assertThat(callbackEnded.get()).as("the callback ended before awaitIdle returned").isPositive();
		}
		finally {
			backend.close();
		}
	}

	@Test
	void aDefaultStreamCannotJoinACaptureByWaitingForAnEventRecordedInIt() {
		CpuDeviceBackend backend = new CpuDeviceBackend(new BackendConfig(0, 1, 1 << 20, 0, List.of(), (Path) null));
		try {
			CpuStream origin = (CpuStream) backend.createStream(StreamPriority.NORMAL, "pool-1");
			NativeStream byDefault = backend.defaultStream(DefaultStreamMode.PER_THREAD);
			NativeCapture capture = backend.beginCapture(origin);
			NativeEvent fork = backend.createEvent(false);
			fork.record(origin);
			assertThatThrownBy(() -> byDefault.waitEvent(fork)).isInstanceOf(GpuException.class)
				.hasMessageContaining("is a default stream, which cannot join a capture");
			assertThat(byDefault.capture()).as("not joined").isNull();
			CpuStream side = (CpuStream) backend.createStream(StreamPriority.NORMAL, "pool-2");
			side.waitEvent(fork);
			assertThat(side.capture()).as("a pooled stream joins").isSameAs(capture);
			capture.abort();
			assertThat(side.capture()).isNull();
			byDefault.synchronize();
		}
		finally {
			backend.close();
		}
	}

}
