package dev.gpucompute.internal.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The completions of a {@link dev.gpucompute.GpuContext}: actions that run once a stream's work so far is done
 * (the futures of copies and stream work), on the context's completion threads or on a thread
 * waiting for the action's {@link CompletionFuture}, never on the backend's callback thread; and, at
 * close, the end of those whose work the context gives up on.
 * Thread-safe; the context owns it and shuts it down at close.
 */
public final class ContextCompletions {

	private final int contextId;

	private final ExecutorService completions;

	/** Completions waiting for their stream's work, so that close can finish those it abandons. */
	private final Set<PendingCompletion> pendingCompletions = ConcurrentHashMap.newKeySet();

	/**
	 * Waiting threads running (or about to claim) an offered completion. The completion threads' copy
	 * of such a task does nothing, so {@link #shutdown} waits for these as well as for those threads.
	 */
	private final AtomicInteger runByWaiters = new AtomicInteger();

	/** Set at close once pending work is given up on; completions registered later end at once. */
	private volatile @Nullable String abandonedAtClose;

	/** How long a thread waiting for a completion's future spins for it (see {@link CompletionFuture}). */
	private final long waitSpinNanos;

	/** Told when a thread waits for a completion, or null. */
	private final CompletionFuture.@Nullable Waits waits;

	/**
	 * Starts no thread yet: completion threads start when there is work for them.
	 * @param contextId the context's number, for the name of a thread started after the shutdown
	 * @param threadPrefix the name of the completion threads, numbered from 1
	 * @param waitSpinNanos how long a thread waiting for the future of a {@link #whenDone(NativeStream, BiConsumer)}
	 * spins for its completion before it blocks
	 * @param waits told when a thread starts and ends such a wait (the backend's), or null
	 */
	public ContextCompletions(int contextId, String threadPrefix, long waitSpinNanos,
			CompletionFuture.@Nullable Waits waits) {
		this.contextId = contextId;
		this.completions = Executors.newCachedThreadPool(ContextThreads.daemon(threadPrefix));
		this.waitSpinNanos = waitSpinNanos;
		this.waits = waits;
	}

	/**
	 * A future that {@code action} completes once {@code stream}'s work so far is done, which a thread
	 * waiting for it may complete itself (see {@link CompletionFuture}); {@code action} gets the future.
	 */
	public <T> CompletableFuture<T> whenDone(NativeStream stream, BiConsumer<CompletableFuture<T>, GpuException> action) {
		CompletionFuture<T> future = new CompletionFuture<>(this.waitSpinNanos, this.waits);
		whenDone(stream, future, (failure) -> action.accept(future, failure));
		return future;
	}

	/**
	 * Runs {@code action} off the backend's callback thread once {@code stream}'s work so far is done,
	 * with the failures of that work not reported yet (see {@link NativeStream#whenDone}). If the
	 * context closes first and gives up on that work, {@code action} gets a
	 * {@link ContextClosedException} saying it was abandoned at close: it always runs, once.
	 */
	public void whenDone(NativeStream stream, Consumer<GpuException> action) {
		whenDone(stream, null, action);
	}

	/**
	 * As {@link #whenDone(NativeStream, Consumer)}, where {@code action} completes {@code future}: the
	 * action is also offered to a thread waiting for that future, which runs it if it gets there before
	 * a completion thread (see {@link CompletionFuture}). It still runs once.
	 */
	public void whenDone(NativeStream stream, @Nullable CompletionFuture<?> future, Consumer<GpuException> action) {
		PendingCompletion pending = new PendingCompletion(action, future);
		this.pendingCompletions.add(pending);
		if (this.abandonedAtClose != null) {
			abandon(pending);
			return;
		}
		try {
			stream.whenDone((failure) -> {
				if (claim(pending)) {
					dispatch(pending, failure);
				}
			});
		}
		catch (RuntimeException ex) {
			claim(pending);
			throw ex;
		}
	}

	/** Claims {@code pending} for its one run and drops it from the waiting set; false when another path has it. */
	private boolean claim(PendingCompletion pending) {
		if (!pending.claim()) {
			return false;
		}
		this.pendingCompletions.remove(pending);
		return true;
	}

	/**
	 * Runs a completion action on the completion threads, never on the backend's callback thread;
	 * offered to the thread waiting for its future too, and run by whichever claims it first.
	 */
	private void dispatch(PendingCompletion pending, GpuException failure) {
		if (pending.future == null) {
			execute(() -> pending.action.accept(failure));
			return;
		}
		Runnable once = new RunOnce(() -> {
			try {
				pending.action.accept(failure);
			}
			catch (RuntimeException | Error ex) {
				// A completion must not throw; if one does, its future fails instead of hanging, whichever
				// thread ran it (a waiter's CompletionFuture does the same).
				pending.future.completeExceptionally(ex);
				throw ex;
			}
		});
		pending.future.offer(() -> {
			// Counted before the claim: if the completion thread's copy finds the task claimed, shutdown,
			// which waited for that thread, then sees this count until the action has ended.
			this.runByWaiters.incrementAndGet();
			try {
				once.run();
			}
			finally {
				this.runByWaiters.decrementAndGet();
			}
		});
		execute(once);
	}

	/** Runs a task that completes futures on the completion threads (a thread of its own once they stopped). */
	public void execute(Runnable task) {
		try {
			this.completions.execute(task);
		}
		catch (RejectedExecutionException ex) {
			// Closed: still never on the backend's callback thread, where driver calls are refused.
			Thread thread = new Thread(task, "gpu-" + this.contextId + "-late-completion");
			thread.setDaemon(true);
			thread.start();
		}
	}

	private void abandon(PendingCompletion pending) {
		if (claim(pending)) {
			dispatch(pending, new ContextClosedException(this.abandonedAtClose));
		}
	}

	/** Completions whose work is not done yet. */
	public int pending() {
		return this.pendingCompletions.size();
	}

	/**
	 * Gives up on the work of every waiting completion, at close: each runs now with a
	 * {@link ContextClosedException} carrying {@code reason}, and so does every completion registered
	 * from now on.
	 * @return how many waiting completions were abandoned
	 */
	public int abandonAll(String reason) {
		this.abandonedAtClose = reason;
		int abandoned = 0;
		for (PendingCompletion pending : List.copyOf(this.pendingCompletions)) {
			if (claim(pending)) {
				abandoned++;
				dispatch(pending, new ContextClosedException(reason));
			}
		}
		return abandoned;
	}

	/**
	 * Stops the completion threads once the tasks handed to them ran, and waits (as long) for the
	 * completions that waiting threads claimed; later tasks get a thread of their own.
	 */
	public void shutdown() {
		this.completions.shutdown();
		ContextThreads.awaitQuietly(this.completions);
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		while (this.runByWaiters.get() > 0 && deadline - System.nanoTime() > 0 && !Thread.currentThread().isInterrupted()) {
			LockSupport.parkNanos(this, TimeUnit.MICROSECONDS.toNanos(100));
		}
	}

	/** A completion action that runs once: when its work is done, or when close gives up on that work. */
	private static final class PendingCompletion {

		private static final VarHandle CLAIMED;

		static {
			try {
				CLAIMED = MethodHandles.lookup().findVarHandle(PendingCompletion.class, "claimed", boolean.class);
			}
			catch (ReflectiveOperationException ex) {
				throw new ExceptionInInitializerError(ex);
			}
		}

		final Consumer<GpuException> action;

		/** The future {@link #action} completes, offered the action when its work is done; or null. */
		final @Nullable CompletionFuture<?> future;

		@SuppressWarnings("unused") // through CLAIMED
		private volatile boolean claimed;

		PendingCompletion(Consumer<GpuException> action, @Nullable CompletionFuture<?> future) {
			this.action = action;
			this.future = future;
		}

		boolean claim() {
			return CLAIMED.compareAndSet(this, false, true);
		}

	}

	/** A task that runs its work once however many threads run it: a completion thread and a waiter. */
	private static final class RunOnce implements Runnable {

		private static final VarHandle RAN;

		static {
			try {
				RAN = MethodHandles.lookup().findVarHandle(RunOnce.class, "ran", boolean.class);
			}
			catch (ReflectiveOperationException ex) {
				throw new ExceptionInInitializerError(ex);
			}
		}

		private final Runnable work;

		@SuppressWarnings("unused") // through RAN
		private volatile boolean ran;

		RunOnce(Runnable work) {
			this.work = work;
		}

		@Override
		public void run() {
			if (RAN.compareAndSet(this, false, true)) {
				this.work.run();
			}
		}

	}

}
