package dev.gpucompute.cpu;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;

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
 * <p>Thread-safe; all state is guarded by one monitor, held only for bookkeeping, never while work
 * runs or callbacks are called.
 */
final class CpuStream implements NativeStream {

	private static final Logger log = LoggerFactory.getLogger(CpuStream.class);

	/** Most failures attached to one report as suppressed; more are counted, not kept. */
	private static final int MAX_SUPPRESSED = 8;

	private final CpuDeviceBackend backend;

	private final String name;

	final int priority;

	private final boolean destroyable;

	private final Object lock = new Object();

	// ---- guarded by lock ----

	private final ArrayDeque<Op> queue = new ArrayDeque<>();

	/** Whether an operation is running (then new ones queue behind it). */
	private boolean busy;

	/** Sequence number of the last operation enqueued. */
	private long enqueued;

	/** Sequence number of the last operation finished. */
	private long completed;

	/** Failures of operations up to here belong to a holder that has given the stream back. */
	private long discardedThrough;

	/** Failures not reported yet, in operation order; usually empty. */
	private List<Failure> failures;

	/** Waits registered and not yet reached; usually empty. */
	private List<Waiter> waiters;

	/** The smallest target among {@link #waiters}, so that finishing an operation skips the scan. */
	private long nextTarget = Long.MAX_VALUE;

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
	private GpuException abandoned;

	CpuStream(CpuDeviceBackend backend, String name, int priority, boolean destroyable) {
		this.backend = backend;
		this.name = name;
		this.priority = priority;
		this.destroyable = destroyable;
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

	}

	/** A host task run by one worker. */
	private static final class Task extends Op {

		private final Runnable body;

		Task(Runnable body) {
			this.body = body;
		}

		@Override
		boolean start(CpuStream stream) {
			stream.backend.execute(stream.priority, () -> {
				Throwable failure = null;
				try {
					this.body.run();
				}
				catch (Throwable ex) {
					failure = ex;
				}
				stream.finish(this, failure);
			});
			return false;
		}

	}

	/** Runs {@code action} inline, the moment the work before it is done. */
	private static final class Inline extends Op {

		private final Runnable action;

		Inline(Runnable action) {
			this.action = action;
		}

		@Override
		boolean start(CpuStream stream) {
			this.action.run();
			return true;
		}

	}

	/** Holds the stream until another stream reaches a point (an event's record). */
	private static final class Wait extends Op {

		private final CpuStream source;

		private final long target;

		Wait(CpuStream source, long target) {
			this.source = source;
			this.target = target;
		}

		@Override
		boolean start(CpuStream stream) {
			return this.source.whenReached(this.target, () -> stream.finish(this, null));
		}

	}

	/** Appends an operation; starts it here when the stream is idle. */
	void enqueue(Op op) {
		synchronized (this.lock) {
			if (this.abandoned != null) {
				return; // closed under a late caller: nothing runs any more, its waits are abandoned
			}
			op.seq = ++this.enqueued;
			if (this.busy) {
				this.queue.addLast(op);
				return;
			}
			this.busy = true;
		}
		run(op);
	}

	/** Appends a host task run by one worker. */
	void enqueueTask(Runnable task) {
		enqueue(new Task(task));
	}

	/**
	 * Ends an operation started earlier, with its failure or {@code null}, and starts the next. Called
	 * once per operation, on whatever thread did its work.
	 */
	void finish(Op op, Throwable failure) {
		run(advance(op, failure));
	}

	/** Starts operations in order until one is handed over; a loop, so inline ones never nest. */
	private void run(Op op) {
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
	private Op advance(Op op, Throwable thrown) {
		GpuException failure = (thrown != null) ? wrap(thrown) : null;
		if (failure instanceof KernelLaunchException kernel) {
			// Counted before the operation counts as finished, so that whoever waited for it sees the count.
			this.backend.kernelFailed(kernel.kernelName(), kernel);
		}
		List<Waiter> reached = null;
		Op next;
		boolean orphan = false;
		synchronized (this.lock) {
			this.completed = op.seq;
			if (failure != null) {
				orphan = !keep(op.seq, failure);
			}
			if (this.nextTarget <= op.seq) {
				reached = takeReached(op.seq);
				this.calling++;
			}
			next = (this.abandoned == null) ? this.queue.pollFirst() : null;
			this.busy = next != null;
			if (reached == null && this.blocked > 0 && op.seq >= this.wakeAt) {
				wakeBlocked();
			}
		}
		if (orphan) {
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

	/** Wakes the blocked threads, which then register the next point they wait for; with the lock held. */
	private void wakeBlocked() {
		this.wakeAt = Long.MAX_VALUE;
		this.lock.notifyAll();
	}

	// ---- failures ----------------------------------------------------------------------------------

	private record Failure(long seq, GpuException error) {
	}

	/**
	 * Keeps a failure for whoever waits for it; with the lock held. False when nobody can ever claim
	 * it (its holder gave the stream back and left no wait covering it).
	 */
	private boolean keep(long seq, GpuException error) {
		if (seq <= this.discardedThrough && !claimable(seq)) {
			return false;
		}
		if (this.failures == null) {
			this.failures = new ArrayList<>(2);
		}
		this.failures.add(new Failure(seq, error));
		return true;
	}

	/** Whether a registered wait covers operation {@code seq}; with the lock held. */
	private boolean claimable(long seq) {
		if (this.waiters != null) {
			for (Waiter waiter : this.waiters) {
				if (waiter.claims && waiter.from < seq && seq <= waiter.target) {
					return true;
				}
			}
		}
		return false;
	}

	/**
	 * Takes the failures of operations in ({@code from}, {@code target}] as one report: the first,
	 * with the rest suppressed. With the lock held; {@code null} when there are none.
	 */
	private GpuException claim(long from, long target) {
		if (this.failures == null || this.failures.isEmpty()) {
			return null;
		}
		GpuException first = null;
		int suppressed = 0;
		for (Iterator<Failure> iterator = this.failures.iterator(); iterator.hasNext();) {
			Failure failure = iterator.next();
			if (failure.seq <= from || failure.seq > target) {
				continue;
			}
			iterator.remove();
			if (first == null) {
				first = failure.error;
			}
			else if (suppressed++ < MAX_SUPPRESSED && first != failure.error) {
				first.addSuppressed(failure.error);
			}
		}
		return first;
	}

	@Override
	public void discardFailures() {
		List<Failure> dropped = null;
		synchronized (this.lock) {
			this.discardedThrough = this.enqueued;
			if (this.failures != null) {
				for (Iterator<Failure> iterator = this.failures.iterator(); iterator.hasNext();) {
					Failure failure = iterator.next();
					if (failure.seq <= this.discardedThrough && !claimable(failure.seq)) {
						iterator.remove();
						if (dropped == null) {
							dropped = new ArrayList<>(1);
						}
						dropped.add(failure);
					}
				}
			}
		}
		if (dropped != null) {
			for (Failure failure : dropped) {
				log.warn("Work on stream {} failed and its lease was returned without waiting for it: {}", this.name,
						failure.error.getMessage());
			}
		}
	}

	// ---- waiting -----------------------------------------------------------------------------------

	/** A registered wait for the stream to reach {@code target}. */
	private static final class Waiter {

		final long target;

		/** The boundary at registration: failures at or before it are not this waiter's. */
		final long from;

		/** Whether it takes the failures it covers (callbacks for callers) or only waits (internal). */
		final boolean claims;

		final Consumer<GpuException> callback;

		GpuException failure;

		Waiter(long target, long from, boolean claims, Consumer<GpuException> callback) {
			this.target = target;
			this.from = from;
			this.claims = claims;
			this.callback = callback;
		}

	}

	/** Removes and returns the waiters reached at {@code seq}, claiming their failures; with the lock held. */
	private List<Waiter> takeReached(long seq) {
		List<Waiter> reached = new ArrayList<>(2);
		long next = Long.MAX_VALUE;
		for (Iterator<Waiter> iterator = this.waiters.iterator(); iterator.hasNext();) {
			Waiter waiter = iterator.next();
			if (waiter.target <= seq) {
				iterator.remove();
				reached.add(waiter);
			}
			else if (waiter.target < next) {
				next = waiter.target;
			}
		}
		this.nextTarget = next;
		for (Waiter waiter : reached) {
			if (waiter.claims) {
				waiter.failure = claim(waiter.from, waiter.target);
			}
		}
		return reached;
	}

	private void addWaiter(Waiter waiter) {
		if (this.waiters == null) {
			this.waiters = new ArrayList<>(2);
		}
		this.waiters.add(waiter);
		if (waiter.target < this.nextTarget) {
			this.nextTarget = waiter.target;
		}
	}

	/** Calls reached waiters outside the lock, then lets idle waits that were held by them go on. */
	private void call(List<Waiter> reached) {
		try {
			for (Waiter waiter : reached) {
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
			}
		}
	}

	@Override
	public void whenDone(Consumer<GpuException> callback) {
		GpuException failure;
		synchronized (this.lock) {
			if (this.abandoned == null && this.completed < this.enqueued) {
				addWaiter(new Waiter(this.enqueued, this.discardedThrough, true, callback));
				return;
			}
			failure = (this.abandoned != null) ? this.abandoned : claim(this.discardedThrough, this.enqueued);
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
			addWaiter(new Waiter(target, 0, false, (failure) -> action.run()));
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
	GpuException await(long target, boolean claim, long from, boolean fromGiven, long deadline) {
		boolean interrupted = false;
		try {
			synchronized (this.lock) {
				long until = (target == Long.MAX_VALUE) ? this.enqueued : target;
				long boundary = fromGiven ? from : this.discardedThrough;
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
				return claim ? claim(boundary, until) : null;
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

	/** A recorded point of this stream: the operations up to {@code seq}, and the failure boundary then. */
	record Mark(CpuStream stream, long seq, long from) {

		boolean reached() {
			return this.stream.reached(this.seq);
		}

	}

	/** Captures the current end of the queue for an event. */
	Mark mark() {
		synchronized (this.lock) {
			return new Mark(this, this.enqueued, this.discardedThrough);
		}
	}

	/**
	 * Appends {@code onReach}, run the moment the work before it is done and before any work enqueued
	 * later starts, and captures the point after it. Timing events stamp their time with it.
	 */
	Mark mark(Runnable onReach) {
		Inline stamp = new Inline(onReach);
		long from;
		synchronized (this.lock) {
			from = this.discardedThrough;
		}
		enqueue(stamp);
		return new Mark(this, stamp.seq, from);
	}

	boolean reached(long seq) {
		synchronized (this.lock) {
			return this.completed >= seq || this.abandoned != null;
		}
	}

	@Override
	public void waitEvent(NativeEvent event) {
		Mark mark = ((CpuEvent) event).mark();
		if (mark == null || mark.reached()) {
			return;
		}
		enqueue(new Wait(mark.stream(), mark.seq()));
	}

	// ---- close -------------------------------------------------------------------------------------

	/**
	 * Gives up on the work not yet started, at close: queued operations are dropped, and callbacks
	 * waiting for them and blocked synchronisations get {@code reason}. Work already running finishes
	 * on its own.
	 */
	void abandon(GpuException reason) {
		List<Waiter> left;
		synchronized (this.lock) {
			if (this.abandoned != null) {
				return;
			}
			this.abandoned = reason;
			this.queue.clear();
			left = (this.waiters != null) ? this.waiters : List.of();
			this.waiters = null;
			this.nextTarget = Long.MAX_VALUE;
			this.lock.notifyAll();
		}
		for (Waiter waiter : left) {
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

	@Override
	public void destroy() {
		if (this.destroyable) {
			this.backend.forget(this);
		}
	}

	@Override
	public String toString() {
		return this.name;
	}

}
