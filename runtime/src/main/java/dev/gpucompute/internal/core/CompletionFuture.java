package dev.gpucompute.internal.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.jspecify.annotations.Nullable;

/**
 * The future of a copy or of {@link dev.gpucompute.GpuStream#completion()} that a thread waiting for it may finish
 * itself. When the stream's work is done, {@link ContextCompletions} hands the future's completion
 * task to the context's completion executor <em>and</em> {@linkplain #offer offers} it here; the task
 * runs once, on whichever thread claims it first. A thread in {@link #join()} or {@link #get()} first
 * spins for up to the context's wait spin (CUDA: 100 µs; CPU backend: none) and, if the task is
 * offered meanwhile, runs it itself; then it waits as any {@link CompletableFuture} does. For the
 * whole wait the backend knows that someone waits ({@link Waits}): the CUDA completion thread then
 * polls without sleeping, so the work is seen done within a poll however long it runs.
 *
 * <p>Why: handing the completion to the executor costs two thread wake-ups (the executor's thread,
 * then the waiting thread), each several microseconds and more on a loaded host, which a raw
 * {@code cuMemcpyHtoDAsync} + {@code cuStreamSynchronize} does not pay; at 1 MiB (about 27 µs on an
 * H200's bus) they decide whether a copy reaches the bus's speed. The executor still gets the task,
 * so a future nobody waits for completes as before, and dependent stages still never run on a backend
 * thread: they run on a completion thread, or on the thread that waited.
 *
 * <p>Thread-safe. Created by the runtime only; callers see a {@link CompletableFuture}.
 */
public final class CompletionFuture<T> extends CompletableFuture<T> {

	private static final VarHandle OFFERED;

	static {
		try {
			OFFERED = MethodHandles.lookup().findVarHandle(CompletionFuture.class, "offered", Runnable.class);
		}
		catch (ReflectiveOperationException ex) {
			throw new ExceptionInInitializerError(ex);
		}
	}

	private final long spinNanos;

	private final @Nullable Waits waits;

	@SuppressWarnings("unused") // through OFFERED
	private volatile @Nullable Runnable offered;

	/** The backend's side of a wait (see {@link dev.gpucompute.spi.DeviceBackend#completionWaitStarted()}). */
	public interface Waits {

		void started();

		void ended();

		/**
		 * Refuses a wait the calling thread may not make (it captures a graph); called before a wait
		 * for a future that is not complete yet. Does nothing by default.
		 */
		default void check() {
		}

	}

	/** @param spinNanos how long a waiting thread spins for the completion task before it blocks (0: not at all) */
	public CompletionFuture(long spinNanos) {
		this(spinNanos, null);
	}

	/**
	 * @param spinNanos how long a waiting thread spins for the completion task before it blocks (0: not at all)
	 * @param waits told when a thread starts and ends waiting for this future (with a spin only; the
	 * CUDA completion thread then polls without sleeping until the wait ends), or null: nobody is told.
	 * The wait ends when the thread stops waiting or takes the offered completion task to run it: the
	 * stream's work is done, and the task, with the dependent stages it runs, may take any time.
	 */
	public CompletionFuture(long spinNanos, @Nullable Waits waits) {
		this.spinNanos = spinNanos;
		this.waits = waits;
	}

	/**
	 * Offers the task that completes this future to a thread waiting for it. The task must run its
	 * work at most once however many threads run it (the executor gets the same task).
	 */
	public void offer(Runnable task) {
		OFFERED.setRelease(this, task);
	}

	/** Refuses the wait (see {@link Waits#check()}) unless there is nothing to wait for. */
	private void checkWait() {
		if (this.waits != null && !isDone()) {
			this.waits.check();
		}
	}

	@Override
	public T join() {
		checkWait();
		boolean owed = prepare(this.spinNanos, true);
		try {
			return super.join();
		}
		finally {
			if (owed) {
				waitEnded();
			}
		}
	}

	@Override
	public T get() throws InterruptedException, ExecutionException {
		checkWait();
		boolean owed = prepare(this.spinNanos, true);
		try {
			return super.get();
		}
		finally {
			if (owed) {
				waitEnded();
			}
		}
	}

	@Override
	public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
		checkWait();
		long nanos = unit.toNanos(timeout);
		long start = System.nanoTime();
		boolean owed = prepare(Math.min(this.spinNanos, nanos), nanos > 0);
		try {
			// The spin (or the completion run here) counts against the timeout.
			return super.get(nanos - (System.nanoTime() - start), TimeUnit.NANOSECONDS);
		}
		finally {
			if (owed) {
				waitEnded();
			}
		}
	}

	/**
	 * What a waiter does before it blocks: announces its wait (when {@code mayTell} and there is
	 * something to wait for), spins up to {@code spin} for the completion task and runs it if it
	 * comes. Once it has the task the stream's work is done, so the wait ends before the task runs:
	 * the backend need not poll for this thread while it runs the completion and the dependent stages
	 * that triggers, which may take any time.
	 * @return whether {@link Waits#ended()} is still owed (the thread goes on to block)
	 */
	private boolean prepare(long spin, boolean mayTell) {
		boolean told = mayTell && tell();
		Runnable task;
		try {
			task = help(spin);
		}
		catch (RuntimeException | Error ex) {
			if (told) {
				waitEnded();
			}
			throw ex;
		}
		if (task == null) {
			return told;
		}
		if (told) {
			waitEnded();
		}
		run(task);
		return false;
	}

	/** Ends a wait that {@link #tell()} announced: it did so only with someone to tell. */
	private void waitEnded() {
		Waits waits = this.waits;
		if (waits != null) {
			waits.ended();
		}
	}

	/**
	 * Tells the backend that this thread is about to wait, unless there is nothing to wait for (done,
	 * or the completion already offered to run here) or this context does not spin.
	 * @return whether {@link Waits#ended()} is owed
	 */
	private boolean tell() {
		if (this.waits == null || this.spinNanos <= 0 || isDone() || OFFERED.getAcquire(this) != null) {
			return false;
		}
		this.waits.started();
		return true;
	}

	/**
	 * Spins up to {@code spin} nanoseconds for the offered task, unless the future completed first or
	 * the thread is interrupted: an interrupted {@code get} throws as any future's does (a plain
	 * {@link CompletableFuture#get()} throws when the future is not done), and the task, which runs
	 * dependent stages, does not run with a pending interrupt they might react to.
	 * @return the offered task, for the caller to {@linkplain #run(Runnable) run}, or null
	 */
	private @Nullable Runnable help(long spin) {
		long start = 0;
		boolean started = false;
		for (;;) {
			if (isDone() || Thread.currentThread().isInterrupted()) {
				return null;
			}
			Runnable task = (Runnable) OFFERED.getAcquire(this);
			if (task != null) {
				return task;
			}
			if (spin <= 0) {
				return null;
			}
			long now = System.nanoTime();
			if (!started) {
				start = now;
				started = true;
			}
			else if (now - start >= spin) {
				return null;
			}
			Thread.onSpinWait();
		}
	}

	/** Runs the offered task on the waiting thread. */
	private void run(Runnable task) {
		try {
			task.run();
		}
		catch (RuntimeException | Error ex) {
			// A completion must not throw; if one does, its future fails instead of hanging, and
			// the waiter gets the failure through the future as any other failure.
			completeExceptionally(ex);
		}
	}

}
