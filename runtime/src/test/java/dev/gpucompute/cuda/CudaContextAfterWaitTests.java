package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import dev.gpucompute.GpuException;
import dev.gpucompute.contract.VirtualThreads;
import dev.gpucompute.cuda.CudaCompletionsTests.FakeOps;
import jcuda.driver.CUresult;

/**
 * The CUDA context across waits on virtual threads, without a driver. A context is current per OS
 * thread, and a virtual thread that waits (for a monitor from Java 24 on, in a park on any version)
 * may go on on another carrier, where the context of the backend it entered is not current, or another
 * device's is: the next driver call then fails with {@code CUDA_ERROR_INVALID_CONTEXT} or acts on the
 * wrong context. A fake driver ({@link Carriers}) keeps which context is current on which carrier and
 * lets the test move a thread to a fresh carrier while it waits; {@link CudaPrimaryContext} sets the
 * context through its injected seam, as {@code CudaPrimaryContextTests} uses it, and the drain's
 * markers ({@link DrainMarkers}) make driver calls through fake events ({@link CudaCompletionsTests.FakeOps})
 * that check the context is current on the caller's carrier. The virtual-thread cases run on Java 21+.
 */
class CudaContextAfterWaitTests {

	private static final Object CONTEXT = new Object();

	private static final long WAIT_SECONDS = 10;

	private final Carriers carriers = new Carriers();

	private final AtomicInteger sets = new AtomicInteger();

	/** The backend's primary context over the fake driver: setting it makes it current on the caller's carrier. */
	private final CudaPrimaryContext primary = new CudaPrimaryContext(null, null, () -> {
		this.sets.incrementAndGet();
		this.carriers.makeCurrent(CONTEXT);
		return CudaErrors.SUCCESS;
	}, () -> CudaErrors.SUCCESS);

	private final CheckedOps ops = new CheckedOps();

	/** As {@code CudaStreams} builds them: the context made current again after each wait. */
	private final DrainMarkers<String, FakeOps.Event> markers = new DrainMarkers<>(this.ops, this.primary::makeCurrent);

	@Test
	void aStreamRetiringOnAVirtualThreadSetsTheContextAgainAfterWaitingForTheMarkersLock() throws Exception {
		// A retired stream whose work still runs, so a drain queries its marker under the markers' lock.
		this.primary.makeCurrent();
		this.ops.fake.enqueue("pool-0");
		assertThat(this.markers.retire("pool-0")).isTrue();
		// A drain holds the lock, inside a query, while a virtual thread destroys another stream.
		HeldLock held = holdMarkersLock(() -> this.markers.awaitIdle(List.of(), this::record, 0));
		AtomicBoolean covered = new AtomicBoolean();
		Thread destroying = VirtualThreads.start(() -> {
			this.primary.makeCurrent(); // CudaStream.destroy's entry
			this.ops.fake.enqueue("pool-1");
			covered.set(this.markers.retire("pool-1"));
		});
		moveWhileBlocked(destroying, held);
		assertThat(covered).as("the stream's work covered by a marker").isTrue();
		assertThat(this.ops.withoutContext).as("driver calls on a carrier without the context").isEmpty();
		this.ops.fake.finish("pool-0");
		this.ops.fake.finish("pool-1");
		assertThat(this.markers.awaitIdle(List.of(), this::record, 0)).isTrue();
	}

	@Test
	void aDrainOnAVirtualThreadSetsTheContextAgainAfterWaitingForTheMarkersLock() throws Exception {
		this.primary.makeCurrent();
		this.ops.fake.enqueue("pool-0");
		this.markers.retire("pool-0");
		// A stream retiring on another thread holds the lock while it queries the markers retired before.
		HeldLock held = holdMarkersLock(() -> this.markers.retire("pool-1"));
		AtomicReference<Boolean> idle = new AtomicReference<>();
		Thread draining = VirtualThreads.start(() -> {
			this.primary.makeCurrent(); // CudaDeviceBackend.awaitIdle's entry
			idle.set(this.markers.awaitIdle(List.of("legacy"), this::record, 0));
		});
		moveWhileBlocked(draining, held);
		assertThat(idle.get()).as("work of the retired stream still runs").isFalse();
		assertThat(this.ops.withoutContext).as("driver calls on a carrier without the context").isEmpty();
	}

	@Test
	void aDrainOnAVirtualThreadSetsTheContextAgainAfterEachPause() throws Exception {
		this.ops.fake.enqueue("pool-0");
		// Each pause of the drain parks the virtual thread, which goes on on another carrier; the work
		// ends during the third.
		AtomicInteger pauses = new AtomicInteger();
		this.ops.onPause = () -> {
			this.carriers.moveToAnotherCarrier(Thread.currentThread());
			if (pauses.incrementAndGet() == 3) {
				this.ops.fake.finish("pool-0");
			}
		};
		AtomicReference<Boolean> idle = new AtomicReference<>();
		Thread draining = VirtualThreads.start(() -> {
			this.primary.makeCurrent();
			idle.set(this.markers.awaitIdle(List.of("pool-0"), this::record, TimeUnit.SECONDS.toNanos(WAIT_SECONDS)));
		});
		draining.join();
		assertThat(idle.get()).isTrue();
		assertThat(pauses).hasValue(3);
		assertThat(this.ops.withoutContext).as("driver calls on a carrier without the context").isEmpty();
	}

	@Test
	void onAPlatformThreadTheWaitsSetNoContext() throws Exception {
		// A platform thread never changes OS thread: after its entry, its waits cost no driver call.
		this.ops.fake.enqueue("pool-0");
		this.ops.onPause = () -> {
			if (this.ops.pauses.get() == 3) {
				this.ops.fake.finish("pool-0");
			}
		};
		AtomicReference<Boolean> idle = new AtomicReference<>();
		Thread draining = new Thread(() -> {
			this.primary.makeCurrent();
			this.markers.retire("pool-1");
			idle.set(this.markers.awaitIdle(List.of("pool-0"), this::record, TimeUnit.SECONDS.toNanos(WAIT_SECONDS)));
		});
		draining.start();
		draining.join();
		assertThat(idle.get()).isTrue();
		assertThat(this.ops.pauses).hasValue(3);
		assertThat(this.sets).as("cuCtxSetCurrent calls: the entry's only").hasValue(1);
		assertThat(this.ops.withoutContext).isEmpty();
	}

	// ---- the fake driver -----------------------------------------------------------------------

	/**
	 * The driver's current context per OS thread, and the OS thread (carrier) each Java thread runs
	 * on now: its own until the test moves it, as the scheduler moves a virtual thread that waited.
	 */
	static final class Carriers {

		private final AtomicInteger next = new AtomicInteger();

		private final Map<Thread, Integer> carrierOf = new ConcurrentHashMap<>();

		private final Map<Integer, Object> current = new ConcurrentHashMap<>();

		private int carrier() {
			return this.carrierOf.computeIfAbsent(Thread.currentThread(), (thread) -> this.next.incrementAndGet());
		}

		/** {@code cuCtxSetCurrent}: binds the context to the calling OS thread. */
		void makeCurrent(Object context) {
			this.current.put(carrier(), context);
		}

		boolean isCurrent(Object context) {
			return this.current.get(carrier()) == context;
		}

		/** {@code thread} goes on on an OS thread it never ran on, where no context is current. */
		void moveToAnotherCarrier(Thread thread) {
			this.carrierOf.put(thread, this.next.incrementAndGet());
		}

	}

	/** The fake events, whose every driver call first checks that the context is current on the caller's carrier. */
	final class CheckedOps implements CudaCompletions.Ops<String, FakeOps.Event> {

		final FakeOps fake = new FakeOps();

		/** The driver calls made where the context was not current. */
		final List<String> withoutContext = Collections.synchronizedList(new ArrayList<>());

		final AtomicInteger pauses = new AtomicInteger();

		volatile Runnable onPause;

		/** When set, the first query by that thread waits here: it holds the markers' lock meanwhile. */
		volatile Thread holder;

		final CountDownLatch holding = new CountDownLatch(1);

		final CountDownLatch release = new CountDownLatch(1);

		private boolean current(String call) {
			if (CudaContextAfterWaitTests.this.carriers.isCurrent(CONTEXT)) {
				return true;
			}
			this.withoutContext.add(call + " on " + Thread.currentThread());
			return false;
		}

		@Override
		public FakeOps.Event createEvent() {
			if (!current("cuEventCreate")) {
				throw new GpuException("cuEventCreate returned CUDA_ERROR_INVALID_CONTEXT");
			}
			return this.fake.createEvent();
		}

		@Override
		public int record(FakeOps.Event event, String stream) {
			return current("cuEventRecord") ? this.fake.record(event, stream) : CUresult.CUDA_ERROR_INVALID_CONTEXT;
		}

		@Override
		public int query(FakeOps.Event event) {
			if (Thread.currentThread() == this.holder && this.holding.getCount() > 0) {
				this.holding.countDown();
				awaitQuietly(this.release);
			}
			return current("cuEventQuery") ? this.fake.query(event) : CUresult.CUDA_ERROR_INVALID_CONTEXT;
		}

		@Override
		public void destroy(FakeOps.Event event) {
			if (current("cuEventDestroy")) {
				this.fake.destroy(event);
			}
		}

		@Override
		public GpuException recordFailure(int code, String stream) {
			return this.fake.recordFailure(code, stream);
		}

		@Override
		public GpuException asyncFailure(int code, String stream) {
			return this.fake.asyncFailure(code, stream);
		}

		@Override
		public String name(String stream) {
			return stream;
		}

		@Override
		public void enterThread() {
		}

		@Override
		public void nap(Object blocker, long nanos) {
			this.pauses.incrementAndGet();
			Runnable hook = this.onPause;
			if (hook != null) {
				hook.run();
			}
		}

	}

	// ---- helpers -------------------------------------------------------------------------------

	/** {@code CudaStream.recordForDrain} without its lock. */
	private int record(String stream, FakeOps.Event marker) {
		return this.ops.record(marker, stream);
	}

	/** A platform thread inside the markers' lock, held in a query until {@link #moveWhileBlocked}. */
	private record HeldLock(Thread thread) {
	}

	private HeldLock holdMarkersLock(Runnable underLock) throws InterruptedException {
		Thread holder = new Thread(() -> {
			this.primary.makeCurrent();
			underLock.run();
		});
		this.ops.holder = holder;
		holder.start();
		assertThat(this.ops.holding.await(WAIT_SECONDS, TimeUnit.SECONDS)).as("the lock is held").isTrue();
		return new HeldLock(holder);
	}

	/**
	 * Waits until {@code waiting} blocks on the markers' lock, moves it to another carrier (where it
	 * goes on once it has the lock) and lets the holder go.
	 */
	private void moveWhileBlocked(Thread waiting, HeldLock held) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
		while (waiting.getState() != Thread.State.BLOCKED && waiting.isAlive() && System.nanoTime() < deadline) {
			Thread.sleep(1);
		}
		assertThat(waiting.getState()).as("waiting for the markers' lock").isEqualTo(Thread.State.BLOCKED);
		this.carriers.moveToAnotherCarrier(waiting);
		this.ops.release.countDown();
		held.thread().join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
		waiting.join(TimeUnit.SECONDS.toMillis(WAIT_SECONDS));
		assertThat(waiting.isAlive()).isFalse();
	}

	private static void awaitQuietly(CountDownLatch latch) {
		try {
			latch.await(WAIT_SECONDS, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
