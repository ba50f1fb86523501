package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntConsumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.KernelLaunchException;

/**
 * The event-polling completion path against fake events that the test completes or fails: callbacks
 * run off the caller's thread with the outcome, in order per stream, each once, nothing is lost
 * between whenDone and the sleeping poller, close settles what is queued, and a flush answers at
 * once when nothing is left to run and otherwise sleeps between its looks until its deadline.
 */
class CudaCompletionsTests {

	/** An event is a counter position of its stream: done once the stream's "device" reached it. */
	static final class FakeOps implements CudaCompletions.Ops<String, FakeOps.Event> {

		static final class Event {

			volatile String stream;

			volatile long position;

		}

		final Map<String, AtomicInteger> progress = new ConcurrentHashMap<>();

		final Map<String, Long> enqueued = new ConcurrentHashMap<>();

		final Map<String, Integer> failures = new ConcurrentHashMap<>();

		final AtomicInteger created = new AtomicInteger();

		final AtomicInteger destroyed = new AtomicInteger();

		volatile int recordResult = CudaErrors.SUCCESS;

		volatile Thread pollerThread;

		/** Work enqueued on {@code stream}: the next event recorded there completes only after it. */
		void enqueue(String stream) {
			this.enqueued.merge(stream, 1L, Long::sum);
		}

		/** The device finishes all work enqueued on {@code stream} so far. */
		void finish(String stream) {
			this.progress.computeIfAbsent(stream, (key) -> new AtomicInteger()).set(this.enqueued.getOrDefault(stream, 0L).intValue());
		}

		@Override
		public Event createEvent() {
			this.created.incrementAndGet();
			return new Event();
		}

		@Override
		public int record(Event event, String stream) {
			if (this.recordResult != CudaErrors.SUCCESS) {
				return this.recordResult;
			}
			event.stream = stream;
			event.position = this.enqueued.getOrDefault(stream, 0L);
			return CudaErrors.SUCCESS;
		}

		/** cuEventQuery calls so far. */
		final AtomicInteger queries = new AtomicInteger();

		/** cuEventQuery calls by threads other than the completion thread (a drain's), by stream. */
		final Map<String, AtomicInteger> otherQueries = new ConcurrentHashMap<>();

		@Override
		public int query(Event event) {
			this.queries.incrementAndGet();
			if (event.stream == null) {
				return CudaErrors.SUCCESS; // never recorded: no work before it, as the driver answers
			}
			if (Thread.currentThread() != this.pollerThread) {
				this.otherQueries.computeIfAbsent(event.stream, (key) -> new AtomicInteger()).incrementAndGet();
			}
			Integer failure = this.failures.get(event.stream);
			if (failure != null) {
				return failure;
			}
			long reached = this.progress.computeIfAbsent(event.stream, (key) -> new AtomicInteger()).get();
			return (reached >= event.position) ? CudaErrors.SUCCESS : CudaErrors.NOT_READY;
		}

		@Override
		public void destroy(Event event) {
			this.destroyed.incrementAndGet();
		}

		@Override
		public GpuException recordFailure(int code, String stream) {
			return CudaErrors.toException(code, "cuEventRecord", "k", stream, 0, false);
		}

		@Override
		public GpuException asyncFailure(int code, String stream) {
			return CudaErrors.toException(code, "work on the stream", "k", stream, 0, false);
		}

		@Override
		public String name(String stream) {
			return stream;
		}

		@Override
		public void enterThread() {
			this.pollerThread = Thread.currentThread();
		}

		/** When set, a nap lasts until the thread is unparked, not for its time: only a wake-up ends it. */
		volatile boolean napUntilUnparked;

		final AtomicInteger naps = new AtomicInteger();

		/** Run on the poller at the start of each nap, with the nap's number (from 1). */
		volatile IntConsumer onNap;

		/** By nap number: when it started, the queries made before it, and when it ended. */
		final Map<Integer, Long> napStarts = new ConcurrentHashMap<>();

		final Map<Integer, Integer> queriesBeforeNap = new ConcurrentHashMap<>();

		final Map<Integer, Long> napEnds = new ConcurrentHashMap<>();

		/** The pauses asked for by threads other than the completion thread (a flush's, a drain's), in order. */
		final List<Long> otherPauses = Collections.synchronizedList(new ArrayList<>());

		@Override
		public void nap(Object blocker, long nanos) {
			if (Thread.currentThread() != this.pollerThread) {
				// A waiting caller's pause: it lasts the whole time asked for, so the number of pauses
				// before a deadline shows how often the caller looked.
				this.otherPauses.add(nanos);
				long end = System.nanoTime() + nanos;
				for (long left = nanos; left > 0; left = end - System.nanoTime()) {
					LockSupport.parkNanos(blocker, left);
				}
				return;
			}
			int nap = this.naps.incrementAndGet();
			this.queriesBeforeNap.put(nap, this.queries.get());
			this.napStarts.put(nap, System.nanoTime());
			IntConsumer hook = this.onNap;
			if (hook != null) {
				hook.accept(nap);
			}
			if (this.napUntilUnparked) {
				LockSupport.park(blocker);
			}
			else {
				LockSupport.parkNanos(blocker, nanos);
			}
			this.napEnds.put(nap, System.nanoTime());
		}

		/** Waits (up to 5 s) until the poller started nap number {@code nap}. */
		void awaitNap(int nap) throws InterruptedException {
			long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
			while (!this.napStarts.containsKey(nap) && System.nanoTime() - until < 0) {
				Thread.sleep(1);
			}
			assertThat(this.napStarts).as("naps").containsKey(nap);
		}

	}

	private final FakeOps ops = new FakeOps();

	private final CudaCompletions<String, FakeOps.Event> completions = new CudaCompletions<>(this.ops, 0);

	@AfterEach
	void close() {
		this.completions.close();
	}

	@Test
	void aCallbackRunsOnTheCompletionThreadOnceTheWorkBeforeItIsDone() throws Exception {
		this.ops.enqueue("A");
		CountDownLatch done = new CountDownLatch(1);
		AtomicReference<Object> outcome = new AtomicReference<>("not called");
		AtomicReference<Thread> thread = new AtomicReference<>();
		this.completions.whenDone("A", (failure) -> {
			outcome.set(failure);
			thread.set(Thread.currentThread());
			done.countDown();
		});
		assertThat(done.await(200, TimeUnit.MILLISECONDS)).as("not before the work is done").isFalse();
		this.ops.finish("A");
		assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(outcome.get()).isNull();
		assertThat(thread.get()).isNotSameAs(Thread.currentThread()).isSameAs(this.ops.pollerThread);
		assertThat(thread.get().getName()).startsWith("gpu-cuda0-completions-");
	}

	@Test
	void aWaiterThatArrivesWakesAPollerNappingBetweenPolls() throws Exception {
		// Naps that only a wake-up ends: the callback can run only if the waiter's arrival wakes the poller.
		this.ops.napUntilUnparked = true;
		this.ops.enqueue("A");
		CountDownLatch done = new CountDownLatch(1);
		this.completions.whenDone("A", (failure) -> done.countDown());
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		while (this.ops.naps.get() == 0 && System.nanoTime() < until) {
			Thread.sleep(1);
		}
		assertThat(this.ops.naps.get()).as("the poller naps once its spin window is over").isPositive();
		this.ops.finish("A");
		assertThat(done.await(100, TimeUnit.MILLISECONDS)).as("not seen while the poller naps").isFalse();
		this.completions.waiterArrived();
		assertThat(done.await(5, TimeUnit.SECONDS)).as("seen once a waiter arrives").isTrue();
		this.completions.waiterLeft();
	}

	@Test
	void whileAThreadWaitsThePollerPollsWithoutNapping() throws Exception {
		// Stream A's work never ends. A waiter arrives during nap 1 and stays: no nap follows while it
		// waits, however long (a one-off restart of the spin window would nap again after 100 µs).
		CountDownLatch arrived = new CountDownLatch(1);
		this.ops.onNap = (nap) -> {
			if (nap == 1) {
				this.completions.waiterArrived();
				arrived.countDown();
			}
		};
		this.ops.enqueue("A");
		this.completions.whenDone("A", (failure) -> {
		});
		assertThat(arrived.await(5, TimeUnit.SECONDS)).isTrue();
		int queries = this.ops.queries.get();
		Thread.sleep(50);
		assertThat(this.ops.naps.get()).as("naps while a thread waits").isEqualTo(1);
		assertThat(this.ops.queries.get()).as("polls while a thread waits").isGreaterThan(queries);
		this.completions.waiterLeft();
		this.ops.awaitNap(2);
	}

	@Test
	void aWaiterThatComesAndGoesRestartsTheSpinWindow() throws Exception {
		// Stream A's work never ends; a waiter arrives during naps 1, 3 and 5. After each, the poller
		// spins again (a full window, SPIN_NANOS) before its next nap, not one poll and back to sleep.
		this.ops.onNap = (nap) -> {
			if (nap <= 5 && nap % 2 == 1) {
				// A waiter that came and went (its work done elsewhere): one spin window.
				this.completions.waiterArrived();
				this.completions.waiterLeft();
			}
		};
		this.ops.enqueue("A");
		this.completions.whenDone("A", (failure) -> {
		});
		this.ops.awaitNap(6);
		for (int nap = 1; nap <= 5; nap += 2) {
			long awake = this.ops.napStarts.get(nap + 1) - this.ops.napEnds.get(nap);
			assertThat(awake).as("time polling after nap %d, when a waiter came", nap)
				.isGreaterThanOrEqualTo(CompletionPolling.SPIN_NANOS);
		}
	}

	@Test
	void workQueuedBehindWorkInFlightDoesNotRestartTheSpinWindow() throws Exception {
		// Stream A's first work never ends; during naps 1 to 5 another callback is queued behind it.
		// Each waits for the first, so the poller polls once and naps again, instead of spinning a
		// window per request (which kept a core busy as long as requests kept coming). During nap 7 a
		// callback comes on stream B, where nothing is queued: it may be a short copy, worth a spin.
		this.ops.onNap = (nap) -> {
			if (nap <= 5 || nap == 7) {
				String stream = (nap == 7) ? "B" : "A";
				this.ops.enqueue(stream);
				this.completions.whenDone(stream, (failure) -> {
				});
			}
		};
		this.ops.enqueue("A");
		this.completions.whenDone("A", (failure) -> {
		});
		this.ops.awaitNap(8);
		for (int nap = 1; nap <= 5; nap++) {
			int polls = this.ops.queriesBeforeNap.get(nap + 1) - this.ops.queriesBeforeNap.get(nap);
			assertThat(polls).as("polls between nap %d and the next, a callback queued behind others", nap).isEqualTo(1);
		}
		long awake = this.ops.napStarts.get(8) - this.ops.napEnds.get(7);
		assertThat(awake).as("time polling after nap 7, a callback on an idle stream").isGreaterThanOrEqualTo(CompletionPolling.SPIN_NANOS);
	}

	@Test
	void waitersWithoutAPollerOrWorkAreHarmless() throws Exception {
		this.completions.waiterArrived();
		this.completions.waiterLeft();
		this.ops.enqueue("A");
		CountDownLatch done = new CountDownLatch(1);
		this.completions.whenDone("A", (failure) -> done.countDown());
		this.completions.waiterArrived();
		this.completions.waiterLeft();
		this.ops.finish("A");
		assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
	}

	@Test
	void callbacksOfOneStreamRunInOrderAndAnotherStreamIsNotHeldUpByIt() throws Exception {
		List<String> order = Collections.synchronizedList(new ArrayList<>());
		CountDownLatch bDone = new CountDownLatch(1);
		CountDownLatch all = new CountDownLatch(4);
		for (int i = 1; i <= 3; i++) {
			this.ops.enqueue("A");
			String name = "A" + i;
			this.completions.whenDone("A", (failure) -> {
				order.add(name);
				all.countDown();
			});
		}
		this.ops.enqueue("B");
		this.completions.whenDone("B", (failure) -> {
			order.add("B");
			bDone.countDown();
			all.countDown();
		});
		this.ops.finish("B");
		assertThat(bDone.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(order).containsExactly("B");
		this.ops.finish("A");
		assertThat(all.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(order).containsExactly("B", "A1", "A2", "A3");
	}

	@Test
	void theFailureAnEventReportsReachesTheCallback() throws Exception {
		this.ops.enqueue("A");
		this.ops.failures.put("A", 700);
		CountDownLatch done = new CountDownLatch(1);
		AtomicReference<GpuException> outcome = new AtomicReference<>();
		this.completions.whenDone("A", (failure) -> {
			outcome.set(failure);
			done.countDown();
		});
		assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
		assertThat(outcome.get()).isInstanceOf(KernelLaunchException.class).hasMessageContaining("CUDA_ERROR_ILLEGAL_ADDRESS");
	}

	@Test
	void aStickyRecordFailureRunsTheCallbackAtOnceAndOthersThrow() {
		this.ops.recordResult = 700;
		AtomicReference<GpuException> outcome = new AtomicReference<>();
		this.completions.whenDone("A", outcome::set);
		assertThat(outcome.get()).hasMessageContaining("CUDA_ERROR_ILLEGAL_ADDRESS");
		this.ops.recordResult = CudaErrors.INVALID_HANDLE;
		assertThatThrownBy(() -> this.completions.whenDone("A", (failure) -> {
		})).isInstanceOf(GpuException.class).hasMessageContaining("cuEventRecord");
		assertThat(this.ops.destroyed.get()).isEqualTo(2);
	}

	@Test
	void manyProducersGetEachCompletionExactlyOnce() throws Exception {
		int producers = 4;
		int each = 5_000;
		// One count per completion: a lost callback leaves its count at 0, a doubled one at 2, which
		// one latch for all of them cannot tell apart (a double would stand in for a loss).
		AtomicIntegerArray calls = new AtomicIntegerArray(producers * each);
		AtomicIntegerArray failed = new AtomicIntegerArray(producers * each);
		CountDownLatch firstCalls = new CountDownLatch(producers * each);
		ExecutorService pool = Executors.newFixedThreadPool(producers);
		try {
			for (int p = 0; p < producers; p++) {
				String stream = "S" + p;
				int base = p * each;
				pool.submit(() -> {
					for (int i = 0; i < each; i++) {
						int index = base + i;
						this.ops.enqueue(stream);
						this.completions.whenDone(stream, (failure) -> {
							if (failure != null) {
								failed.incrementAndGet(index);
							}
							if (calls.incrementAndGet(index) == 1) {
								firstCalls.countDown();
							}
						});
						if (i % 7 == 0) {
							this.ops.finish(stream);
						}
						if (i % 500 == 0) {
							Thread.onSpinWait();
						}
					}
					this.ops.finish(stream);
					return null;
				});
			}
			assertThat(firstCalls.await(30, TimeUnit.SECONDS)).as("%d completions never called", firstCalls.getCount())
				.isTrue();
		}
		finally {
			pool.shutdownNow();
		}
		// After close no callback can run any more: a late second call would have happened by now.
		this.completions.close();
		for (int index = 0; index < calls.length(); index++) {
			assertThat(calls.get(index)).as("calls of completion %d", index).isEqualTo(1);
			assertThat(failed.get(index)).as("failures of completion %d (all work finished)", index).isZero();
		}
	}

	@Test
	void eventsAreRecycledNotCreatedPerCall() throws Exception {
		for (int i = 0; i < 200; i++) {
			this.ops.enqueue("A");
			CountDownLatch done = new CountDownLatch(1);
			this.completions.whenDone("A", (failure) -> done.countDown());
			this.ops.finish("A");
			assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
		}
		assertThat(this.ops.created.get()).isLessThanOrEqualTo(2);
	}

	@Test
	void closeSettlesEveryQueuedCallbackDoneOrAbandoned() throws Exception {
		this.ops.enqueue("A");
		this.ops.enqueue("B");
		List<Object> outcomes = Collections.synchronizedList(new ArrayList<>());
		this.completions.whenDone("A", (failure) -> outcomes.add("A:" + failure));
		this.completions.whenDone("B", (failure) -> outcomes.add(failure));
		this.ops.finish("A");
		Thread.sleep(50);
		this.completions.close();
		assertThat(outcomes).hasSize(2);
		assertThat(outcomes.get(0)).isEqualTo("A:null");
		assertThat(outcomes.get(1)).isInstanceOf(ContextClosedException.class)
			.asString().contains("closed before the work on stream B was seen to finish");
		AtomicReference<GpuException> late = new AtomicReference<>();
		this.completions.whenDone("A", late::set);
		assertThat(late.get()).as("after close: settled at once, no thread").isInstanceOf(ContextClosedException.class);
	}

	// ---- flush: what the backend's awaitIdle waits for once the device is idle ----

	@Test
	void flushRunsTheCallbacksOfFinishedWorkThatANappingPollerHasNotSeen() throws Exception {
		// Naps that only a wake-up ends: the poller would not see the finished work by itself. The context's
		// close abandons every completion still pending when awaitIdle returns, so flush must deliver it.
		this.ops.napUntilUnparked = true;
		this.ops.enqueue("A");
		this.ops.enqueue("B");
		AtomicInteger ran = new AtomicInteger();
		this.completions.whenDone("A", (failure) -> ran.incrementAndGet());
		this.completions.whenDone("B", (failure) -> ran.incrementAndGet());
		this.ops.awaitNap(1);
		this.ops.finish("A");
		this.ops.finish("B");
		Thread.sleep(50);
		assertThat(ran.get()).as("not seen while the poller naps").isZero();
		assertThat(this.completions.flush(System.nanoTime() + TimeUnit.SECONDS.toNanos(5))).isTrue();
		assertThat(ran.get()).as("callbacks run when flush returns").isEqualTo(2);
	}

	@Test
	void flushDoesNotWaitForWorkStillRunningAndStillDeliversWhatFinished() throws Exception {
		this.ops.napUntilUnparked = true;
		this.ops.enqueue("A");
		this.ops.enqueue("B");
		AtomicReference<Object> a = new AtomicReference<>("not run");
		AtomicReference<Object> b = new AtomicReference<>("not run");
		this.completions.whenDone("A", a::set);
		this.completions.whenDone("B", b::set);
		this.ops.awaitNap(1);
		this.ops.finish("A");
		assertThat(this.completions.flush(System.nanoTime() + TimeUnit.SECONDS.toNanos(5))).isTrue();
		assertThat(a.get()).isNull();
		assertThat(b.get()).as("B's work still runs").isEqualTo("not run");
	}

	@Test
	void flushOfAnIdleOrNeverStartedPollerReturnsAtOnce() throws Exception {
		assertThat(this.completions.flush(System.nanoTime())).as("never started, nothing queued").isTrue();
		this.ops.enqueue("A");
		CountDownLatch done = new CountDownLatch(1);
		this.completions.whenDone("A", (failure) -> done.countDown());
		this.ops.finish("A");
		assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
		// Nothing queued now: the thread parks for want of work, and flush wakes it for its passes.
		Thread.sleep(20);
		assertThat(this.completions.flush(System.nanoTime() + TimeUnit.SECONDS.toNanos(5))).isTrue();
	}

	@Test
	void flushWithNoTimeLeftAnswersIdleOnceEveryCallbackRan() throws Exception {
		// A drain whose budget is spent (drainTimeout 0, or batchers that used it) on an idle device
		// whose completion thread once ran: nothing is left to run, so it is idle whatever the deadline.
		this.ops.enqueue("A");
		CountDownLatch done = new CountDownLatch(1);
		this.completions.whenDone("A", (failure) -> done.countDown());
		this.ops.finish("A");
		assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
		awaitParkedForWantOfWork();
		assertThat(this.completions.flush(System.nanoTime())).as("deadline reached, nothing left").isTrue();
		assertThat(this.completions.flush(System.nanoTime() - TimeUnit.SECONDS.toNanos(1))).as("deadline long past")
			.isTrue();
		assertThat(this.ops.otherPauses).as("answered without waiting").isEmpty();
	}

	@Test
	void flushWithNoTimeLeftAnswersNotIdleWithoutWaitingWhileACallbackIsQueued() throws Exception {
		this.ops.enqueue("A");
		this.completions.whenDone("A", (failure) -> {
		});
		assertThat(this.completions.flush(System.nanoTime())).isFalse();
		assertThat(this.ops.otherPauses).as("answered without waiting").isEmpty();
	}

	/** Waits (up to 5 s) until the completion thread is parked with nothing queued: every callback has returned. */
	private void awaitParkedForWantOfWork() throws InterruptedException {
		long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		Thread poller = this.ops.pollerThread;
		while ((poller.getState() != Thread.State.WAITING || LockSupport.getBlocker(poller) != this.completions)
				&& System.nanoTime() - until < 0) {
			Thread.sleep(1);
		}
		assertThat(poller.getState()).as("completion thread parked for want of work").isEqualTo(Thread.State.WAITING);
	}

	@Test
	void flushGivesUpAtItsDeadlineWhileACallbackIsStuckSleepingLongerBetweenLooks() throws Exception {
		CountDownLatch release = new CountDownLatch(1);
		CountDownLatch entered = new CountDownLatch(1);
		this.ops.enqueue("A");
		this.completions.whenDone("A", (failure) -> {
			entered.countDown();
			try {
				release.await(10, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		this.ops.finish("A");
		assertThat(entered.await(5, TimeUnit.SECONDS)).isTrue();
		long span = TimeUnit.MILLISECONDS.toNanos(200);
		long deadline = System.nanoTime() + span;
		boolean flushed;
		try {
			flushed = this.completions.flush(deadline);
		}
		finally {
			release.countDown();
		}
		assertThat(flushed).isFalse();
		assertThat(System.nanoTime() - deadline).as("gave up at the deadline, not before").isNotNegative();
		// Each pause of the fake lasts the time asked for, so the pauses are all the looks flush took.
		// A spin would take none (or a pause per look: thousands); this backs off as the work gate does.
		List<Long> pauses = List.copyOf(this.ops.otherPauses);
		assertThat(pauses).as("flush sleeps between its looks").isNotEmpty();
		long expected = CudaCompletions.FLUSH_FIRST_PAUSE_NANOS;
		for (int i = 0; i < pauses.size(); i++) {
			if (i < pauses.size() - 1) {
				assertThat(pauses.get(i)).as("pause %d", i).isEqualTo(expected);
			}
			else {
				assertThat(pauses.get(i)).as("the last pause, cut at the deadline").isPositive().isLessThanOrEqualTo(expected);
			}
			expected = Math.min(expected * 2, CudaCompletions.FLUSH_MAX_PAUSE_NANOS);
		}
		long doublings = Long.numberOfTrailingZeros(Long.highestOneBit(
				CudaCompletions.FLUSH_MAX_PAUSE_NANOS / CudaCompletions.FLUSH_FIRST_PAUSE_NANOS)) + 1;
		assertThat(pauses).as("looks in %d ms", TimeUnit.NANOSECONDS.toMillis(span))
			.hasSizeLessThanOrEqualTo((int) (doublings + span / CudaCompletions.FLUSH_MAX_PAUSE_NANOS + 1));
	}

}
