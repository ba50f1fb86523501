package dev.gpucompute.cuda;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.INT;
import static dev.gpucompute.ParamType.LONG;
import static dev.gpucompute.cuda.CudaTestSupport.TEST_KERNELS_PTX;
import static dev.gpucompute.cuda.CudaTestSupport.args;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import dev.gpucompute.GpuException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeKernel;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

/**
 * Streams and events of the CUDA backend against a real device: kernels on two streams overlap,
 * timing events, default streams, completion callbacks and stream priorities. Skipped with the
 * probe's reason without a device; failed instead when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaBackendStreamGpuTests extends CudaBackendGpuFixture {

	private static final KernelSource RENDEZVOUS = KernelSource.named("rendezvous")
		.params(BUFFER, BUFFER, INT, INT, LONG)
		.cudaResource(TEST_KERNELS_PTX);

	/**
	 * Two kernels on two streams each announce themselves and wait (bounded) for the other: both
	 * see each other only if they ran at the same time. Proven by the flags on the device, not by a
	 * stopwatch.
	 */
	@Test
	void kernelsOnTwoStreamsOverlap() {
		NativeKernel rendezvous = backend.loadKernel(RENDEZVOUS);
		NativeStream other = backend.createStream(StreamPriority.HIGH, "test-other");
		NativeEvent ready = backend.createEvent(false);
		ByteBuffer host = backend.allocateStaging(16);
		try {
			NativeMemory flags = backend.allocate(8, this.stream);
			NativeMemory seen = backend.allocate(8, this.stream);
			backend.fill(flags, 0, 8, (byte) 0, this.stream);
			backend.fill(seen, 0, 8, (byte) 0, this.stream);
			ready.record(this.stream);
			other.waitEvent(ready);
			long timeoutNanos = TimeUnit.SECONDS.toNanos(10);
			backend.launch(rendezvous, ONE_THREAD, args(flags, seen, 0, 1, timeoutNanos), this.stream);
			backend.launch(rendezvous, ONE_THREAD, args(flags, seen, 1, 0, timeoutNanos), other);
			other.synchronize();
			this.stream.synchronize();
			backend.copyToHost(flags, 0, host, 8, this.stream);
			host.position(8);
			backend.copyToHost(seen, 0, host, 8, this.stream);
			host.position(0);
			backend.free(flags, this.stream);
			backend.free(seen, this.stream);
			this.stream.synchronize();
			assertThat(new int[] { host.getInt(0), host.getInt(4) }).as("flags").containsExactly(1, 1);
			assertThat(new int[] { host.getInt(8), host.getInt(12) }).as("each kernel saw the other").containsExactly(1, 1);
		}
		finally {
			backend.freeStaging(host);
			ready.destroy();
			other.destroy();
		}
	}

	@Test
	void timingEventsMeasureDeviceTime() {
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeEvent start = backend.createEvent(true);
		NativeEvent stop = backend.createEvent(true);
		NativeEvent plain = backend.createEvent(false);
		try {
			NativeMemory out = backend.allocate(4, this.stream);
			start.record(this.stream);
			backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(100), out, 1), this.stream);
			stop.record(this.stream);
			plain.record(this.stream);
			backend.free(out, this.stream);
			stop.synchronize();
			assertThat(stop.query()).isTrue();
			assertThat(stop.elapsedMillisSince(start)).isBetween(95f, 10_000f);
			assertThatThrownBy(() -> plain.elapsedMillisSince(start)).isInstanceOf(GpuException.class)
				.hasMessageContaining("timing");
		}
		finally {
			start.destroy();
			stop.destroy();
			plain.destroy();
		}
	}

	@Test
	void anEventNeverRecordedIsComplete() {
		NativeEvent event = backend.createEvent(false);
		try {
			assertThat(event.query()).isTrue();
			event.synchronize();
		}
		finally {
			event.destroy();
		}
	}

	/**
	 * Synchronising a default stream really waits: the kernel sleeps 300 ms, so an event recorded
	 * after it is complete right after synchronize() only if synchronize() waited for it.
	 */
	@ParameterizedTest
	@EnumSource(DefaultStreamMode.class)
	void synchronizingTheDefaultStreamReallyWaits(DefaultStreamMode mode) {
		NativeStream defaultStream = backend.defaultStream(mode);
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeEvent after = backend.createEvent(false);
		ByteBuffer host = backend.allocateStaging(4);
		try {
			NativeMemory out = backend.allocate(4, defaultStream);
			backend.fill(out, 0, 4, (byte) 0, defaultStream);
			backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(300), out, 42), defaultStream);
			after.record(defaultStream);
			assertThat(after.query()).as("the kernel is still sleeping").isFalse();
			defaultStream.synchronize();
			assertThat(after.query()).as("complete right after synchronize()").isTrue();
			assertThat(defaultStream.query()).isTrue();
			backend.copyToHost(out, 0, host, 4, defaultStream);
			backend.free(out, defaultStream);
			defaultStream.synchronize();
			assertThat(host.getInt(0)).isEqualTo(42);
		}
		finally {
			backend.freeStaging(host);
			after.destroy();
		}
	}

	@Test
	void defaultStreamsAreOnePerModeAndThreadAndCannotBeDestroyed() throws Exception {
		assertThat(backend.defaultStream(DefaultStreamMode.LEGACY)).isSameAs(backend.defaultStream(DefaultStreamMode.LEGACY));
		NativeStream mine = backend.defaultStream(DefaultStreamMode.PER_THREAD);
		assertThat(backend.defaultStream(DefaultStreamMode.PER_THREAD)).isSameAs(mine);
		AtomicReference<NativeStream> theirs = new AtomicReference<>();
		Thread thread = new Thread(() -> theirs.set(backend.defaultStream(DefaultStreamMode.PER_THREAD)));
		thread.start();
		thread.join();
		assertThat(theirs.get()).isNotSameAs(mine);
		mine.destroy(); // a no-op
		mine.synchronize();
	}

	@Test
	void whenDoneRunsAfterTheWorkWithoutAFailure() throws Exception {
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeEvent after = backend.createEvent(false);
		CountDownLatch done = new CountDownLatch(1);
		AtomicReference<Object> failure = new AtomicReference<>("not called");
		try {
			NativeMemory out = backend.allocate(4, this.stream);
			backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(50), out, 1), this.stream);
			after.record(this.stream);
			this.stream.whenDone((ex) -> {
				failure.set(ex);
				done.countDown();
			});
			backend.free(out, this.stream);
			assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
			assertThat(failure.get()).isNull();
			assertThat(after.query()).as("the callback came after the work").isTrue();
		}
		finally {
			after.destroy();
		}
	}

	@Test
	void manyWhenDoneCallbacksRunOffTheCallingThreadInOrderAfterTheirWork() throws Exception {
		NativeKernel sleep = backend.loadKernel(SLEEP_THEN_WRITE);
		NativeMemory out = backend.allocate(4, this.stream);
		int count = 2000;
		java.util.List<Integer> order = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
		CountDownLatch all = new CountDownLatch(count);
		AtomicReference<Thread> callbackThread = new AtomicReference<>();
		backend.launch(sleep, ONE_THREAD, args(TimeUnit.MILLISECONDS.toNanos(100), out, 1), this.stream);
		for (int i = 0; i < count; i++) {
			int index = i;
			this.stream.whenDone((failure) -> {
				if (failure == null) {
					order.add(index);
				}
				callbackThread.set(Thread.currentThread());
				all.countDown();
			});
		}
		assertThat(order).as("none before the kernel finished").isEmpty();
		assertThat(all.await(30, TimeUnit.SECONDS)).isTrue();
		assertThat(order).hasSize(count).isSorted();
		assertThat(callbackThread.get()).isNotSameAs(Thread.currentThread());
		backend.free(out, this.stream);
	}

	@Test
	void highPriorityStreamsGetTheGreatestPriorityAndNormalOnesCudasDefault() {
		NativeStream high = backend.createStream(StreamPriority.HIGH, "high");
		try {
			int highPriority = ((CudaStream) high).priority;
			int normalPriority = ((CudaStream) this.stream).priority;
			// Every GPU this backend supports has a real range (e.g. 0..-5): a [0, 0] range, or HIGH mapped to
			// the same priority as NORMAL, fails here.
			assertThat(highPriority).as("HIGH is numerically lower (stronger) than NORMAL").isLessThan(normalPriority);
			assertThat(normalPriority).isZero();
		}
		finally {
			high.destroy();
		}
	}

}
