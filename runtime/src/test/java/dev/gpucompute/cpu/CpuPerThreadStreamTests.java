package dev.gpucompute.cpu;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.ref.WeakReference;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.GpuException;
import dev.gpucompute.spi.BackendConfig;
import dev.gpucompute.contract.VirtualThreads;

/**
 * The per-thread default streams of the CPU backend: a thread's own while it lives, kept by the
 * backend only while they have work, so that threads that come and go (a virtual thread per request)
 * leave no stream behind, while device synchronisation, the drain and close still cover the work of
 * threads that already ended. Whether the backend keeps a stream is observed by reachability: a stream
 * that nothing but the backend references is collected once the backend lets it go.
 */
class CpuPerThreadStreamTests {

	/** Rounds of collection a released stream gets to be collected; one is normally enough. */
	private static final int GC_ROUNDS = 50;

	private static final long WAIT_SECONDS = 10;

	private final CpuDeviceBackend backend = new CpuDeviceBackend(new BackendConfig(0, 2, 1 << 20, 0, List.of(), (Path) null));

	@AfterEach
	void close() {
		this.backend.close();
	}

	@Test
	void theDefaultStreamsOfPlatformThreadsThatEndedAreNotKept() throws Exception {
		assertNotKept(1_000, CpuPerThreadStreamTests::platformThread);
	}

	@Test
	void theDefaultStreamsOfVirtualThreadsThatEndedAreNotKept() throws Exception {
		// One per request in a service with spring.threads.virtual.enabled: 10,000 of them left 10,009 streams.
		VirtualThreads.assumeAvailable();
		assertNotKept(10_000, VirtualThreads::start);
	}

	/**
	 * Starts {@code threads} threads that each enqueue work on their default stream, half of them
	 * waiting for it and half ending while it may still run; the device synchronisation then waits for
	 * all of it, and afterwards none of their streams may still be reachable.
	 */
	private void assertNotKept(int threads, Function<Runnable, Thread> starter) throws Exception {
		AtomicInteger ran = new AtomicInteger();
		List<WeakReference<CpuStream>> streams = new ArrayList<>(threads);
		List<Thread> started = new ArrayList<>(threads);
		for (int i = 0; i < threads; i++) {
			boolean waits = i % 2 == 0;
			WeakReference<?>[] own = new WeakReference<?>[1];
			Thread thread = starter.apply(() -> {
				CpuStream stream = (CpuStream) this.backend.defaultStream(DefaultStreamMode.PER_THREAD);
				own[0] = new WeakReference<>(stream);
				stream.enqueueTask(ran::incrementAndGet);
				if (waits) {
					stream.synchronize();
				}
			});
			started.add(thread);
			thread.join();
			@SuppressWarnings("unchecked")
			WeakReference<CpuStream> reference = (WeakReference<CpuStream>) own[0];
			streams.add(reference);
		}
		started.clear();
		this.backend.synchronizeDevice();
		assertThat(ran).as("work of threads that ended, waited for by the device synchronisation").hasValue(threads);
		assertThat(streams).as("one default stream per thread").hasSize(threads);
		long kept = streamsStillReachable(streams);
		assertThat(kept).as("default streams of %d ended threads still held by the backend", threads).isZero();
	}

	@Test
	void deviceSynchronisationWaitsForTheWorkOfAThreadThatEnded() throws Exception {
		CountDownLatch running = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		AtomicInteger done = new AtomicInteger();
		Thread owner = platformThread(() -> {
			CpuStream stream = (CpuStream) this.backend.defaultStream(DefaultStreamMode.PER_THREAD);
			stream.enqueueTask(() -> {
				running.countDown();
				awaitQuietly(release);
			});
			stream.enqueueTask(done::incrementAndGet);
		});
		owner.join();
		assertThat(running.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
		Thread synchronizing = platformThread(this.backend::synchronizeDevice);
		// Rendezvous: the synchronisation blocks in the ended thread's stream (the others are idle).
		awaitState(synchronizing, Thread.State.WAITING);
		assertThat(done).as("the work behind the running task").hasValue(0);
		assertThat(this.backend.awaitIdle(0)).as("the drain sees the ended thread's work").isFalse();
		release.countDown();
		synchronizing.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
		assertThat(synchronizing.isAlive()).as("the synchronisation returned").isFalse();
		assertThat(done).hasValue(1);
		assertThat(this.backend.awaitIdle(0)).isTrue();
	}

	@Test
	void closeAbandonsTheQueuedWorkOfAThreadThatEnded() throws Exception {
		CountDownLatch running = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		AtomicInteger ran = new AtomicInteger();
		CompletableFuture<GpuException> callback = new CompletableFuture<>();
		Thread owner = platformThread(() -> {
			CpuStream stream = (CpuStream) this.backend.defaultStream(DefaultStreamMode.PER_THREAD);
			stream.enqueueTask(() -> {
				running.countDown();
				awaitQuietly(release);
			});
			stream.enqueueTask(ran::incrementAndGet);
			stream.whenDone(callback::complete);
		});
		owner.join();
		assertThat(running.await(WAIT_SECONDS, TimeUnit.SECONDS)).isTrue();
		this.backend.close();
		release.countDown();
		assertThat(callback.get(WAIT_SECONDS, TimeUnit.SECONDS)).isInstanceOf(ContextClosedException.class)
			.hasMessageContaining("abandoned at close");
		assertThat(ran).as("queued work of the ended thread did not start").hasValue(0);
	}

	@Test
	void aThreadThatGetsWorkAfterCloseHasItAbandoned() throws Exception {
		CpuStream stream = (CpuStream) this.backend.defaultStream(DefaultStreamMode.PER_THREAD);
		stream.enqueueTask(() -> {
		});
		stream.synchronize();
		this.backend.close();
		// Idle at close, so close did not see it; its next work is refused there, not left to hang.
		AtomicInteger ran = new AtomicInteger();
		stream.enqueueTask(ran::incrementAndGet);
		CompletableFuture<GpuException> callback = new CompletableFuture<>();
		stream.whenDone(callback::complete);
		assertThat(callback.get(WAIT_SECONDS, TimeUnit.SECONDS)).isInstanceOf(ContextClosedException.class);
		assertThat(ran).hasValue(0);
	}

	@Test
	void aThreadKeepsItsOwnDefaultStreamWhileIdle() {
		CpuStream first = (CpuStream) this.backend.defaultStream(DefaultStreamMode.PER_THREAD);
		first.enqueueTask(() -> {
		});
		first.synchronize();
		assertThat(this.backend.defaultStream(DefaultStreamMode.PER_THREAD)).isSameAs(first);
		first.enqueueTask(() -> {
		});
		first.synchronize();
		assertThat(first.query()).isTrue();
	}

	// ---- helpers -------------------------------------------------------------------------------

	/** How many of {@code streams} are still reachable after up to {@link #GC_ROUNDS} collections. */
	private static long streamsStillReachable(List<WeakReference<CpuStream>> streams) throws InterruptedException {
		long reachable = streams.size();
		for (int round = 0; round < GC_ROUNDS && reachable > 0; round++) {
			System.gc();
			Thread.sleep(10); // lets a worker that just finished the last task drop its frame
			reachable = streams.stream().filter((reference) -> reference.get() != null).count();
		}
		return reachable;
	}

	private static Thread platformThread(Runnable body) {
		Thread thread = new Thread(body);
		thread.start();
		return thread;
	}

	private static void awaitState(Thread thread, Thread.State state) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
		while (thread.getState() != state && thread.isAlive() && System.nanoTime() < deadline) {
			Thread.sleep(1);
		}
		assertThat(thread.getState()).as("state of %s", thread.getName()).isEqualTo(state);
	}

	private static void awaitQuietly(CountDownLatch latch) {
		try {
			latch.await();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
