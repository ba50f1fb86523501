package dev.gpucompute.cuda;

import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;

/**
 * How {@link CudaStream#whenDone} learns that a stream's work is done, without a
 * {@code cuStreamAddCallback} per call. That driver call blocks every later piece of work on the
 * stream until the JVM callback has run (the driver's callback thread attaches to the JVM, calls
 * Java, returns), costs a host-thread round trip per upload, download and {@code completion()}, and
 * is slated for deprecation.
 *
 * <p>Instead, {@code whenDone} records a recycled event (no timing) on the stream, which costs the
 * stream nothing, and queues it. One completion thread per backend polls the queued events with
 * {@code cuEventQuery}, oldest first per stream (events on one stream complete in order, so it stops
 * at the first that is not done), and runs each callback on that thread with the outcome: {@code null},
 * or the failure the event reports (a sticky error of the work before it). When nothing is queued the
 * thread sleeps until the next {@code whenDone}; while work is in flight it polls, spinning for
 * 100 µs after the last progress and then sleeping 10 µs to 100 µs between polls
 * ({@link CompletionPolling}), so a short copy is seen done within a poll and a long one at most
 * about 100 µs late. While a thread waits for a completion ({@link #waiterArrived} to
 * {@link #waiterLeft}) it polls without sleeping, as {@code cuStreamSynchronize} spins for its
 * caller, so a waiter's work is seen done within a poll whatever its length.
 *
 * <p>Callbacks run on the completion thread, never on a driver thread, and must be short (the
 * context hands them to its own executor). At close, queued callbacks whose event completed get
 * their outcome; the others a {@link ContextClosedException}: nothing waits forever.
 *
 * <p>The driver calls are behind {@link Ops}, so the polling, ordering and close are tested with a
 * fake ({@code CudaCompletionsTests}).
 *
 * @param <S> the stream type
 * @param <E> the event type
 */
final class CudaCompletions<S, E> {

	/** The driver calls and error mapping the completion thread needs. */
	interface Ops<S, E> {

		/** A new event without timing. */
		E createEvent();

		/** {@code cuEventRecord}: a {@code CUresult}. */
		int record(E event, S stream);

		/** {@code cuEventQuery}: success, {@code CUDA_ERROR_NOT_READY}, or the failure of the work before it. */
		int query(E event);

		void destroy(E event);

		/** The exception for a failed record (marks the backend unhealthy when sticky). */
		GpuException recordFailure(int code, S stream);

		/** The exception for the failure an event reported, built without a driver call. */
		GpuException asyncFailure(int code, S stream);

		String name(S stream);

		/** Called once on the completion thread before it polls (makes the context current). */
		void enterThread();

		/**
		 * Sleeps for a pause between two checks: the completion thread's polls while work is in flight,
		 * a {@link #flush}'s or a drain's looks while they wait. May return early (an unpark ends the
		 * completion thread's nap).
		 */
		default void nap(Object blocker, long nanos) {
			LockSupport.parkNanos(blocker, nanos);
		}

	}

	private static final Logger logger = LoggerFactory.getLogger(CudaCompletions.class);

	private static final AtomicInteger THREADS = new AtomicInteger();

	/** Events kept for reuse. */
	private static final int MAX_IDLE_EVENTS = 1024;

	/** A flush's first pause between two looks; it doubles up to {@link #FLUSH_MAX_PAUSE_NANOS}, as the work gate's wait does. */
	static final long FLUSH_FIRST_PAUSE_NANOS = 10_000;

	static final long FLUSH_MAX_PAUSE_NANOS = 1_000_000;

	private record Pending<S, E>(S stream, E event, Consumer<GpuException> callback) {
	}

	private final Ops<S, E> ops;

	private final int ordinal;

	private final Queue<Pending<S, E>> inbox = new ConcurrentLinkedQueue<>();

	private final Queue<E> idleEvents = new ConcurrentLinkedQueue<>();

	private final AtomicInteger idleCount = new AtomicInteger();

	/**
	 * Callbacks queued by {@link #whenDone} whose run has not ended: counted up before one is queued,
	 * down once it returned. Zero means every callback queued so far has run, which {@link #flush}
	 * can tell without the completion thread (and with no time left).
	 */
	private final AtomicInteger unsettled = new AtomicInteger();

	private final Object lifecycle = new Object();

	/** Written under {@code lifecycle}; read without it (volatile) by whenDone, waiters and flush. */
	private volatile @Nullable Thread thread;

	private volatile boolean sleeping;

	/** Sleeping between two polls while work is in flight (not parked for want of work). */
	private volatile boolean napping;

	/** A thread started waiting since the last poll (see {@link #waiterArrived}). */
	private volatile boolean expedited;

	/** Threads waiting for a completion now. */
	private final AtomicInteger waiters = new AtomicInteger();

	private volatile boolean closed;

	/**
	 * Passes the completion thread has finished: each drains the inbox and polls every queue (or finds
	 * nothing queued). Written only by that thread; {@link #flush} waits for passes that began after it.
	 */
	private volatile long passes;

	/** The thread's own queues, by stream, oldest first; touched only by the completion thread, and by close once it stopped. */
	private final Map<S, ArrayDeque<Pending<S, E>>> byStream = new LinkedHashMap<>();

	CudaCompletions(Ops<S, E> ops, int ordinal) {
		this.ops = ops;
		this.ordinal = ordinal;
	}

	/**
	 * Runs {@code callback} once the work enqueued on {@code stream} so far is done. The caller has
	 * entered the backend.
	 */
	void whenDone(S stream, Consumer<GpuException> callback) {
		E event = takeEvent();
		int result = this.ops.record(event, stream);
		if (result != CudaErrors.SUCCESS) {
			this.ops.destroy(event);
			GpuException failure = this.ops.recordFailure(result, stream);
			if (!CudaErrors.isSticky(result)) {
				throw failure;
			}
			// The stream's work already failed for good: it is over, and the callback learns so now.
			callback.accept(failure);
			return;
		}
		Pending<S, E> pending = new Pending<>(stream, event, callback);
		this.unsettled.incrementAndGet();
		this.inbox.add(pending);
		if (this.closed && this.inbox.remove(pending)) {
			// Raced with close, which may already have settled the queue: no driver call any more.
			run(pending, abandoned(stream));
			return;
		}
		ensureStarted();
		if (this.sleeping) {
			LockSupport.unpark(this.thread);
		}
	}

	/**
	 * A thread starts waiting for a queued callback: the next poll comes at once, and until the
	 * matching {@link #waiterLeft} the thread polls without sleeping (one core while anyone waits for
	 * this device; none while nothing is queued). Cheap: an atomic increment, a volatile write, and
	 * an unpark only while the thread naps between polls.
	 */
	void waiterArrived() {
		this.waiters.incrementAndGet();
		this.expedited = true;
		if (this.napping) {
			Thread running = this.thread;
			if (running != null) {
				LockSupport.unpark(running);
			}
		}
	}

	/** The wait {@link #waiterArrived} announced is over. */
	void waiterLeft() {
		this.waiters.decrementAndGet();
	}

	private E takeEvent() {
		E event = this.idleEvents.poll();
		if (event != null) {
			this.idleCount.decrementAndGet();
			return event;
		}
		return this.ops.createEvent();
	}

	private void recycle(E event) {
		if (!this.closed && this.idleCount.incrementAndGet() <= MAX_IDLE_EVENTS) {
			this.idleEvents.add(event);
		}
		else {
			this.idleCount.decrementAndGet();
			this.ops.destroy(event);
		}
	}

	private void ensureStarted() {
		if (this.thread != null) {
			return;
		}
		synchronized (this.lifecycle) {
			if (this.thread == null && !this.closed) {
				Thread started = new Thread(this::run, "gpu-cuda" + this.ordinal + "-completions-" + THREADS.incrementAndGet());
				started.setDaemon(true);
				this.thread = started;
				started.start();
			}
		}
	}

	private void run() {
		try {
			this.ops.enterThread();
		}
		catch (GpuException ex) {
			logger.warn("The completion thread of CUDA device {} could not make the context current: {}", this.ordinal,
					ex.getMessage());
			return;
		}
		CompletionPolling polling = new CompletionPolling();
		while (!this.closed) {
			if (drainInbox() > 0) {
				polling.progress(System.nanoTime());
			}
			if (this.byStream.isEmpty()) {
				endPass();
				this.sleeping = true;
				if (this.inbox.isEmpty() && !this.closed) {
					LockSupport.park(this);
				}
				this.sleeping = false;
				continue;
			}
			int ran = poll(false);
			endPass();
			if (ran > 0) {
				polling.progress(System.nanoTime());
				continue;
			}
			long now = System.nanoTime();
			if (this.expedited || this.waiters.get() > 0) {
				this.expedited = false;
				polling.progress(now);
			}
			long sleep = polling.afterMiss(now);
			if (sleep == 0) {
				Thread.onSpinWait();
			}
			else {
				this.napping = true;
				if (!this.expedited) {
					this.ops.nap(this, sleep);
				}
				this.napping = false;
			}
		}
	}

	/** One pass is over; only the completion thread writes the count, so a plain increment is safe. */
	private void endPass() {
		this.passes = this.passes + 1;
	}

	/**
	 * Waits until the completion thread has run every callback whose work was done when this call
	 * began: for a caller that knows the work is done (the backend's {@code awaitIdle} saw its marker
	 * events complete) but whose callbacks the thread may not have seen yet, since it polls (up to
	 * about 100 µs late while it naps).
	 *
	 * <p>First it looks, without waiting and whatever the deadline, whether any callback queued so far
	 * has not run: when none has, there is nothing to wait for, so an idle device is idle at any
	 * deadline (a drain with no time left included). Otherwise it waits for the end of a pass that
	 * began after the call (the pass in progress may have polled a queue before its work ended), while
	 * the thread polls closely, as for a waiter; this thread meanwhile sleeps between its looks, 10 µs
	 * doubling to 1 ms, so a callback that is stuck costs no core until the deadline. Callbacks of
	 * work still running are not waited for.
	 * @param deadline {@link System#nanoTime()} to give up at
	 * @return whether those callbacks ran by the deadline (also when nothing was ever queued, or after
	 * close, which settles every queued callback itself); false when the thread is stuck in a callback
	 * or gone, or when callbacks are left and no time is
	 */
	boolean flush(long deadline) {
		if (this.closed || this.unsettled.get() == 0) {
			return true;
		}
		if (deadline - System.nanoTime() <= 0) {
			// Callbacks are queued and no time is left to see them run: not idle, whatever passes the
			// thread might make meanwhile (answering by a race would make the same drain say either).
			return false;
		}
		ensureStarted(); // whenDone queues before it starts the thread
		Thread running = this.thread;
		if (running == null) {
			return this.closed;
		}
		long target = this.passes + 2;
		waiterArrived();
		try {
			// Ends a park for want of work: an idle thread makes its passes at once (waiterArrived ends a nap).
			LockSupport.unpark(running);
			long pause = FLUSH_FIRST_PAUSE_NANOS;
			while (this.passes < target && this.unsettled.get() > 0) {
				if (this.closed) {
					return true;
				}
				long left = deadline - System.nanoTime();
				if (left <= 0 || !running.isAlive() || Thread.currentThread().isInterrupted()) {
					return false;
				}
				if (this.sleeping) {
					LockSupport.unpark(running);
				}
				this.ops.nap(this, Math.min(left, pause));
				pause = Math.min(pause * 2, FLUSH_MAX_PAUSE_NANOS);
			}
			return true;
		}
		finally {
			waiterLeft();
		}
	}

	/**
	 * Moves the inbox to the thread's queues.
	 * @return how many callbacks went to a stream with nothing queued before them: work that may be
	 * short (a copy), worth a spin; one queued behind others waits for them, and counting it would keep
	 * the thread spinning for as long as requests keep coming, however long their work runs
	 */
	private int drainInbox() {
		int fresh = 0;
		Pending<S, E> pending;
		while ((pending = this.inbox.poll()) != null) {
			ArrayDeque<Pending<S, E>> queue = this.byStream.computeIfAbsent(pending.stream(), (key) -> new ArrayDeque<>());
			if (queue.isEmpty()) {
				fresh++;
			}
			queue.addLast(pending);
		}
		return fresh;
	}

	/**
	 * Runs the callbacks whose events completed, oldest first per stream.
	 * @param final_ at close: entries still running are settled as abandoned instead of kept
	 * @return how many callbacks ran
	 */
	private int poll(boolean final_) {
		int ran = 0;
		Iterator<Map.Entry<S, ArrayDeque<Pending<S, E>>>> streams = this.byStream.entrySet().iterator();
		while (streams.hasNext()) {
			ArrayDeque<Pending<S, E>> queue = streams.next().getValue();
			Pending<S, E> head;
			while ((head = queue.peekFirst()) != null) {
				int result = this.ops.query(head.event());
				if (result == CudaErrors.NOT_READY && !final_) {
					break;
				}
				queue.pollFirst();
				GpuException failure = null;
				if (result == CudaErrors.SUCCESS) {
					recycle(head.event());
				}
				else {
					this.ops.destroy(head.event());
					failure = (result == CudaErrors.NOT_READY) ? abandoned(head.stream())
							: this.ops.asyncFailure(result, head.stream());
				}
				run(head, failure);
				ran++;
			}
			if (queue.isEmpty()) {
				streams.remove();
			}
		}
		return ran;
	}

	private GpuException abandoned(S stream) {
		return new ContextClosedException("The CUDA backend of device " + this.ordinal + " closed before the work on stream "
				+ this.ops.name(stream) + " was seen to finish; it was abandoned");
	}

	/** Runs a queued callback; it counts as settled once it returned. */
	private void run(Pending<S, E> pending, @Nullable GpuException failure) {
		try {
			pending.callback().accept(failure);
		}
		catch (Throwable ex) {
			logger.error("A completion callback of stream {} threw; callbacks must not throw", this.ops.name(pending.stream()), ex);
		}
		finally {
			this.unsettled.decrementAndGet();
		}
	}

	/**
	 * Stops the completion thread and settles every queued callback: with its outcome when its
	 * event completed, else as abandoned. Called by the backend's close while its context is still
	 * usable; idle events are destroyed.
	 */
	void close() {
		Thread running;
		synchronized (this.lifecycle) {
			this.closed = true;
			running = this.thread;
		}
		if (running != null) {
			LockSupport.unpark(running);
			try {
				running.join(TimeUnit.SECONDS.toMillis(5));
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			if (running.isAlive()) {
				logger.warn("The completion thread of CUDA device {} did not stop within 5 s (a callback is stuck)", this.ordinal);
				return;
			}
		}
		settleAfterClose();
		E event;
		while ((event = this.idleEvents.poll()) != null) {
			this.ops.destroy(event);
		}
	}

	private void settleAfterClose() {
		drainInbox();
		poll(true);
	}

}
