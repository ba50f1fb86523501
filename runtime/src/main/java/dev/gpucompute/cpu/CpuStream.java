package dev.gpucompute.cpu;

import java.util.ArrayDeque;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongPredicate;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuException;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

/**
 * An ordered queue of operations, run one at a time: an operation starts when the one before it has
 * finished. Kernels and copies run on the backend's shared workers; timing stamps run inline; a wait
 * for an event finishes when the event's stream reaches the recorded point, so no worker ever blocks
 * for ordering.
 *
 * <p>Every operation gets a sequence number. A failure is kept with the number of the operation that
 * failed until someone who waits for that operation claims it: a {@link #synchronize()}, a
 * {@link #whenDone} callback or an event wait, each covering the operations enqueued before it
 * started waiting. Claimed failures are reported once. {@link #discardFailures()} (a lease going
 * back to its pool) moves the boundary: failures at or before it reach only waits registered
 * before it, so the next holder of the stream never sees them.
 *
 * <p>This class owns the queue and its sequence numbers, blocking waits, event marks and close;
 * the failures are kept by {@link CpuStreamFailures}, the registered waits by
 * {@link CpuStreamWaiters}, and the operations other than launches are {@link CpuStreamOps}.
 *
 * <p>Thread-safe; all state (the ledger's and the waits' included) is guarded by one monitor, held
 * only for bookkeeping, never while work runs or callbacks are called. A per-thread default stream
 * tells its backend when it turns busy and idle while it holds that monitor (the backend's set of
 * busy default streams is locked after a stream's lock, never before).
 */
final class CpuStream implements NativeStream {

	private static final Logger log = LoggerFactory.getLogger(CpuStream.class);

	/** The device whose workers run this stream's host tasks. */
	final CpuDeviceBackend backend;

	private final String name;

	final int priority;

	private final boolean destroyable;

	/** A per-thread default stream: the backend keeps it only while it has work (see {@link #kept}). */
	private final boolean keptWhileBusy;

	private final Object lock = new Object();

	// ---- guarded by lock ----

	private final ArrayDeque<Op> queue = new ArrayDeque<>();

	/** Whether an operation is running (then new ones queue behind it). */
	private boolean busy;

	/** Sequence number of the last operation enqueued. */
	private long enqueued;

	/** Sequence number of the last operation finished. */
	private long completed;

	/** Failures not reported yet, and the discard boundary. */
	private final CpuStreamFailures failures = new CpuStreamFailures();

	/** Waits registered and not yet reached. */
	private final CpuStreamWaiters waiters = new CpuStreamWaiters();

	/** The waiters' claim on a failure, made once: the failure book asks it on every lease return. */
	private final LongPredicate claimedByAWaiter = this.waiters::covers;

	/** Threads blocked in a synchronisation of this stream. */
	private int blocked;

	/**
	 * The smallest operation a blocked thread waits for: they are woken only once it has finished, not
	 * at every operation (a thread synchronising behind 1000 launches would otherwise wake 1000 times).
	 */
	private long wakeAt = Long.MAX_VALUE;

	/** Waiters being called outside the lock; an idle wait also waits for them. */
	private int calling;

	/** Set when the backend abandoned this stream's work at close. */
	private @Nullable GpuException abandoned;

	/**
	 * The capture this stream takes part in: its operations are recorded there instead of queued.
	 * Written under the lock by the capturing thread; read without it by {@link #capture()}, exact for
	 * that thread.
	 */
	private @Nullable CpuCapture capture;

	/**
	 * Whether the backend keeps this per-thread default stream among those with work in flight: from
	 * the first operation enqueued while it was idle until its work and the callbacks that work
	 * reached are done.
	 */
	private boolean kept;

	/**
	 * @param destroyable whether {@link #destroy()} ends it (created streams; not the default streams)
	 * @param keptWhileBusy a per-thread default stream: the backend keeps it only while it has work
	 * ({@link CpuDeviceBackend#busy}), so that the default streams of threads that ended, once idle, go
	 * with their threads; the others are kept by the backend from their creation on
	 */
	CpuStream(CpuDeviceBackend backend, String name, int priority, boolean destroyable, boolean keptWhileBusy) {
		this.backend = backend;
		this.name = name;
		this.priority = priority;
		this.destroyable = destroyable;
		this.keptWhileBusy = keptWhileBusy;
	}

	@Override
	public String name() {
		return this.name;
	}

	// ---- operations ------------------------------------------------------------------------------

	/**
	 * One unit of work on the stream. {@link #start} is called when everything before it finished:
	 * it either finishes inline (returns {@code true}) or hands the work over and later calls
	 * {@link CpuStream#finish}.
	 */
	abstract static class Op {

		long seq;

		abstract boolean start(CpuStream stream);

		/** This operation as a node of a graph being captured, or {@code null} when it cannot be one. */
		CpuGraph.@Nullable Node node() {
			return null;
		}

	}

	/** Appends an operation; starts it here when the stream is idle. While capturing, records it instead. */
	void enqueue(Op op) {
		CpuCapture recording;
		synchronized (this.lock) {
			if (this.abandoned != null) {
				return; // closed under a late caller: nothing runs any more, its waits are abandoned
			}
			recording = this.capture;
			if (recording == null) {
				if (this.keptWhileBusy && !this.kept) {
					GpuException closing = this.backend.busy(this);
					if (closing != null) {
						this.abandoned = closing; // idle until now, so no wait is registered to tell
						return;
					}
					this.kept = true;
				}
				op.seq = ++this.enqueued;
				if (this.busy) {
					this.queue.addLast(op);
					return;
				}
				this.busy = true;
			}
		}
		if (recording != null) {
			recording.record(this, op);
			return;
		}
		run(op);
	}

	// ---- capture -----------------------------------------------------------------------------------

	@Override
	public dev.gpucompute.spi.@Nullable NativeCapture capture() {
		return this.capture;
	}

	/** Starts recording into {@code started}, which begins here. */
	void beginCapture(CpuCapture started) {
		synchronized (this.lock) {
			if (!this.destroyable) {
				throw new GpuException("Stream " + this.name + " is a default stream, which cannot be captured");
			}
			if (this.capture != null) {
				throw new GpuException("Stream " + this.name + " is being captured already");
			}
			this.capture = started;
		}
	}

	/** Starts recording into {@code joined}, which this stream joins by waiting for one of its events. */
	void joinCapture(CpuCapture joined) {
		synchronized (this.lock) {
			if (this.capture != null && this.capture != joined) {
				throw new GpuException("Stream " + this.name + " takes part in another capture");
			}
			this.capture = joined;
		}
	}

	/** {@code ended} is over: operations run again. */
	void leaveCapture(CpuCapture ended) {
		synchronized (this.lock) {
			if (this.capture == ended) {
				this.capture = null;
			}
		}
	}

	/** Appends a host task run by one worker. */
	void enqueueTask(Runnable task) {
		enqueue(new CpuStreamOps.Task(task));
	}

	/**
	 * Ends an operation started earlier, with its failure or {@code null}, and starts the next. Called
	 * once per operation, on whatever thread did its work.
	 */
	void finish(Op op, @Nullable Throwable failure) {
		run(advance(op, failure));
	}

	/** Starts operations in order until one is handed over; a loop, so inline ones never nest. */
	private void run(@Nullable Op op) {
		while (op != null) {
			boolean done;
			Throwable failure = null;
			try {
				done = op.start(this);
			}
			catch (Throwable ex) {
				done = true;
				failure = ex;
			}
			if (!done) {
				return;
			}
			op = advance(op, failure);
		}
	}

	/** Books a finished operation, calls the waits it reached and returns the next operation to start. */
	private @Nullable Op advance(Op op, @Nullable Throwable thrown) {
		GpuException failure = (thrown != null) ? wrap(thrown) : null;
		if (failure instanceof KernelLaunchException kernel) {
			// Counted before the operation counts as finished, so that whoever waited for it sees the count.
			this.backend.kernelFailed(kernel.kernelName(), kernel);
		}
		List<CpuStreamWaiters.Waiter> reached = null;
		Op next;
		boolean orphan = false;
		synchronized (this.lock) {
			this.completed = op.seq;
			if (failure != null) {
				orphan = !this.failures.keep(op.seq, failure, this.claimedByAWaiter);
			}
			if (this.waiters.anyReachedAt(op.seq)) {
				reached = this.waiters.takeReached(op.seq, this.failures);
				this.calling++;
			}
			next = (this.abandoned == null) ? this.queue.pollFirst() : null;
			this.busy = next != null;
			if (reached == null && this.blocked > 0 && op.seq >= this.wakeAt) {
				wakeBlocked();
			}
			if (reached == null) {
				releaseIfIdle();
			}
		}
		if (orphan && failure != null) { // only a failure is orphaned
			log.warn("Work on stream {} failed after its lease was returned, and nothing waited for it: {}", this.name,
					failure.getMessage());
		}
		if (reached != null) {
			call(reached);
		}
		return next;
	}

	private GpuException wrap(Throwable failure) {
		Throwable cause = (failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null)
				? failure.getCause() : failure;
		return (cause instanceof GpuException gpu) ? gpu
				: new GpuException("Operation on stream " + this.name + " failed: " + cause, cause);
	}

	/**
	 * Lets the backend forget a per-thread default stream whose work and callbacks are all done; with
	 * the lock held. Its thread keeps it, and it joins the backend again with its next operation.
	 */
	private void releaseIfIdle() {
		if (this.kept && !this.busy && this.calling == 0) {
			this.kept = false;
			this.backend.idle(this);
		}
	}

	/** Wakes the blocked threads, which then register the next point they wait for; with the lock held. */
	private void wakeBlocked() {
		this.wakeAt = Long.MAX_VALUE;
		this.lock.notifyAll();
	}

	// ---- failures ----------------------------------------------------------------------------------

	@Override
	public void discardFailures() {
		List<GpuException> dropped;
		synchronized (this.lock) {
			dropped = this.failures.discardThrough(this.enqueued, this.claimedByAWaiter);
		}
		if (dropped != null) {
			for (GpuException failure : dropped) {
				log.warn("Work on stream {} failed and its lease was returned without waiting for it: {}", this.name,
						failure.getMessage());
			}
		}
	}

	// ---- waiting -----------------------------------------------------------------------------------

	/** Calls reached waiters outside the lock, then lets idle waits that were held by them go on. */
	private void call(List<CpuStreamWaiters.Waiter> reached) {
		try {
			for (CpuStreamWaiters.Waiter waiter : reached) {
				try {
					waiter.callback.accept(waiter.failure);
				}
				catch (Throwable ex) {
					log.error("A completion callback of stream {} threw; callbacks must not throw", this.name, ex);
				}
			}
		}
		finally {
			synchronized (this.lock) {
				this.calling--;
				if (this.blocked > 0 && this.calling == 0 && this.completed >= this.wakeAt) {
					wakeBlocked();
				}
				releaseIfIdle();
			}
		}
	}

	@Override
	public void whenDone(Consumer<GpuException> callback) {
		GpuException failure;
		synchronized (this.lock) {
			if (this.capture != null) {
				throw new GpuException("Stream " + this.name + " is being captured: its work does not run, so nothing "
						+ "can wait for it to be done");
			}
			if (this.abandoned == null && this.completed < this.enqueued) {
				this.waiters.add(new CpuStreamWaiters.Waiter(this.enqueued, this.failures.boundary(), true, callback));
				return;
			}
			failure = (this.abandoned != null) ? this.abandoned : this.failures.claim(this.failures.boundary(), this.enqueued);
		}
		callback.accept(failure);
	}

	/**
	 * Runs {@code action} when operation {@code target} has finished; returns {@code true} instead,
	 * without running it, when it already has (or the stream was abandoned). Takes no failures.
	 */
	boolean whenReached(long target, Runnable action) {
		synchronized (this.lock) {
			if (this.abandoned != null || this.completed >= target) {
				return true;
			}
			this.waiters.add(new CpuStreamWaiters.Waiter(target, 0, false, (failure) -> action.run()));
			return false;
		}
	}

	@Override
	public void synchronize() {
		GpuException failure = await(Long.MAX_VALUE, true, 0, false, 0);
		if (failure != null) {
			throw failure;
		}
	}

	/**
	 * Blocks until operation {@code target} (or, with {@code Long.MAX_VALUE}, everything enqueued at
	 * the call) has finished and no waiter is being called.
	 * @param claim whether to take the failures of the operations waited for (from the current
	 * boundary, or from {@code from} when {@code fromGiven})
	 * @param deadline {@link System#nanoTime()} to give up at, or 0 for none
	 * @return the failure claimed, or {@code null}; a timeout returns {@link #TIMED_OUT}
	 * @throws GpuException the abandonment error when the stream was abandoned at close
	 */
	@Nullable GpuException await(long target, boolean claim, long from, boolean fromGiven, long deadline) {
		boolean interrupted = false;
		try {
			synchronized (this.lock) {
				long until = (target == Long.MAX_VALUE) ? this.enqueued : target;
				long boundary = fromGiven ? from : this.failures.boundary();
				this.blocked++;
				try {
					while (this.abandoned == null && (this.completed < until || this.calling > 0)) {
						long waitMillis = 0;
						if (deadline != 0) {
							long left = deadline - System.nanoTime();
							if (left <= 0) {
								return TIMED_OUT;
							}
							waitMillis = Math.max(1, left / 1_000_000);
						}
						if (until < this.wakeAt) {
							this.wakeAt = until;
						}
						try {
							this.lock.wait(waitMillis);
						}
						catch (InterruptedException ex) {
							interrupted = true;
						}
					}
				}
				finally {
					this.blocked--;
				}
				if (this.abandoned != null) {
					throw this.abandoned;
				}
				return claim ? this.failures.claim(boundary, until) : null;
			}
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** Returned by {@link #await} when its deadline passed. */
	static final GpuException TIMED_OUT = new GpuException("timed out") {

		private static final long serialVersionUID = 1L;

		@Override
		public synchronized Throwable fillInStackTrace() {
			return this;
		}

	};

	/** Waits until the work enqueued so far is done, at most until {@code deadline}; false on timeout. */
	boolean awaitIdle(long deadline) {
		try {
			return await(Long.MAX_VALUE, false, 0, false, deadline) != TIMED_OUT;
		}
		catch (GpuException abandonedAtClose) {
			return true;
		}
	}

	/** Waits for all work enqueued so far without reporting failures (device synchronisation). */
	void awaitQuietly() {
		await(Long.MAX_VALUE, false, 0, false, 0);
	}

	@Override
	public boolean query() {
		synchronized (this.lock) {
			return this.completed >= this.enqueued;
		}
	}

	// ---- events --------------------------------------------------------------------------------

	/**
	 * A recorded point of this stream: the operations up to {@code seq}, and the failure boundary then;
	 * or, recorded while the stream was captured, a point of the capture ({@code captured}).
	 */
	record Mark(CpuStream stream, long seq, long from, CpuCapture.@Nullable Point captured) {

		boolean reached() {
			if (this.captured != null) {
				throw new GpuException("The event was recorded while stream " + this.stream.name() + " was being "
						+ "captured: it marks a point of a graph, which never runs as such");
			}
			return this.stream.reached(this.seq);
		}

	}

	/** Captures the current end of the queue for an event (a point of the capture while capturing). */
	Mark mark() {
		CpuCapture recording;
		synchronized (this.lock) {
			recording = this.capture;
			if (recording == null) {
				return new Mark(this, this.enqueued, this.failures.boundary(), null);
			}
		}
		return new Mark(this, 0, 0, recording.point(this));
	}

	/**
	 * Appends {@code onReach}, run the moment the work before it is done and before any work enqueued
	 * later starts, and captures the point after it. Timing events stamp their time with it.
	 */
	Mark mark(Runnable onReach) {
		CpuStreamOps.Inline stamp = new CpuStreamOps.Inline(onReach);
		long from;
		CpuCapture recording;
		synchronized (this.lock) {
			from = this.failures.boundary();
			recording = this.capture;
		}
		if (recording != null) {
			return new Mark(this, 0, 0, recording.point(this)); // a captured point is never reached: no time
		}
		enqueue(stamp);
		return new Mark(this, stamp.seq, from, null);
	}

	boolean reached(long seq) {
		synchronized (this.lock) {
			return this.completed >= seq || this.abandoned != null;
		}
	}

	/**
	 * {@inheritDoc}
	 * <p>An event recorded in a capture makes this stream join that capture, or, when it takes part
	 * already, makes its next recorded operation wait for the event's point. A capturing stream cannot
	 * wait for an event recorded outside its capture (as on CUDA); the context refuses that first.
	 */
	@Override
	public void waitEvent(NativeEvent event) {
		Mark mark = ((CpuEvent) event).mark();
		CpuCapture recording;
		synchronized (this.lock) {
			recording = this.capture;
		}
		if (mark != null && mark.captured() != null) {
			CpuCapture theirs = mark.captured().capture();
			if (recording != null && recording != theirs) {
				throw new GpuException("Stream " + this.name + " takes part in another capture than the event's");
			}
			if (recording == null && !this.destroyable) {
				// The runtime refuses this first (CaptureChecks), as CUDA's stream does.
				throw new GpuException("Stream " + this.name + " is a default stream, which cannot join a capture");
			}
			theirs.join(this, mark.captured());
			return;
		}
		if (recording != null) {
			if (mark == null) {
				return; // never recorded: complete, nothing to wait for
			}
			throw new GpuException("Stream " + this.name + " is being captured and cannot wait for an event recorded "
					+ "outside the capture");
		}
		if (mark == null || mark.reached()) {
			return;
		}
		enqueue(new CpuStreamOps.Wait(mark.stream(), mark.seq()));
	}

	// ---- close -------------------------------------------------------------------------------------

	/**
	 * Gives up on the work not yet started, at close: queued operations are dropped, and callbacks
	 * waiting for them and blocked synchronisations get {@code reason}. Work already running finishes
	 * on its own.
	 */
	void abandon(GpuException reason) {
		List<CpuStreamWaiters.Waiter> left;
		synchronized (this.lock) {
			if (this.abandoned != null) {
				return;
			}
			this.abandoned = reason;
			this.queue.clear();
			left = this.waiters.takeAll();
			this.lock.notifyAll();
		}
		for (CpuStreamWaiters.Waiter waiter : left) {
			if (waiter.claims) {
				try {
					waiter.callback.accept(reason);
				}
				catch (Throwable ex) {
					log.error("A completion callback of stream {} threw; callbacks must not throw", this.name, ex);
				}
			}
		}
	}

	/**
	 * {@inheritDoc}
	 * <p>Work already enqueued here still runs, as on CUDA, where {@code cuStreamDestroy} returns at
	 * once: the pool replaces an idle stream whose last holder returned it before its work ended (a
	 * download whose future is pending). Until that work is done the backend keeps the stream among
	 * those its drain waits for and its close abandons, so close neither abandons the work's
	 * completions after a drain that succeeded nor frees host memory the work still writes.
	 */
	@Override
	public void destroy() {
		if (!this.destroyable) {
			return;
		}
		long last;
		synchronized (this.lock) {
			last = this.enqueued;
		}
		if (whenReached(last, () -> this.backend.forget(this))) {
			this.backend.forget(this);
		}
	}

	@Override
	public String toString() {
		return this.name;
	}

}
