package dev.gpucompute.cpu;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import dev.gpucompute.GpuException;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

/**
 * An ordered queue of operations. The queue is a chain of futures: each operation starts when the
 * previous one completed, and hands its real work to the shared workers. Waiting on an event joins
 * the event's marker into the chain, so no worker ever blocks for ordering.
 */
final class CpuStream implements NativeStream {

	private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

	private final CpuDeviceBackend backend;

	private final String name;

	final int priority;

	private final boolean destroyable;

	private final Object lock = new Object();

	/** Completes when all work enqueued so far is done. Never completes exceptionally. */
	private CompletableFuture<Void> tail = DONE;

	/** First failure not yet reported by {@link #synchronize()}. */
	private GpuException pendingError;

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

	/**
	 * Appends an operation. {@code start} runs once the work before it is done; it must not block:
	 * it dispatches the work, which then ends by calling {@link #finish} with the future it was
	 * given. The stream's queue is one future per operation, each started by its predecessor, so an
	 * operation costs one future and one dependent, whichever thread completes the work.
	 */
	void enqueue(Consumer<CompletableFuture<Void>> start) {
		CompletableFuture<Void> done = new CompletableFuture<>();
		CompletableFuture<Void> previous;
		synchronized (this.lock) {
			previous = this.tail;
			this.tail = done;
		}
		// Attached outside the lock: when the previous operation is already done, start runs here.
		// whenComplete, not thenRun: should a stage before it ever fail, the stream must still move on.
		previous.whenComplete((ignored, failure) -> {
			try {
				start.accept(done);
			}
			catch (RuntimeException ex) {
				finish(done, ex);
			}
		});
	}

	/**
	 * Ends an operation: records its failure, if any, for the next {@link #synchronize()}, then lets
	 * the next operation start. The queue's futures never complete exceptionally.
	 */
	void finish(CompletableFuture<Void> done, Throwable failure) {
		if (failure != null) {
			fail(failure);
		}
		done.complete(null);
	}

	/** Appends a host task run by one worker. */
	void enqueueTask(Runnable task) {
		enqueue((done) -> this.backend.execute(this.priority, () -> {
			Throwable failure = null;
			try {
				task.run();
			}
			catch (Throwable ex) {
				failure = ex;
			}
			finish(done, failure);
		}));
	}

	private void fail(Throwable failure) {
		Throwable cause = (failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null)
				? failure.getCause() : failure;
		GpuException error = (cause instanceof GpuException gpu) ? gpu
				: new GpuException("Operation on stream " + this.name + " failed: " + cause, cause);
		synchronized (this.lock) {
			if (this.pendingError == null) {
				this.pendingError = error;
			}
		}
	}

	CompletableFuture<Void> tail() {
		synchronized (this.lock) {
			return this.tail;
		}
	}

	@Override
	public void synchronize() {
		CompletableFuture<Void> snapshot = tail();
		boolean interrupted = false;
		while (true) {
			try {
				snapshot.get();
				break;
			}
			catch (InterruptedException ex) {
				interrupted = true;
			}
			catch (java.util.concurrent.ExecutionException ex) {
				break; // the chain never fails; kept for completeness
			}
		}
		if (interrupted) {
			Thread.currentThread().interrupt();
		}
		GpuException error;
		synchronized (this.lock) {
			error = this.pendingError;
			this.pendingError = null;
		}
		if (error != null) {
			throw error;
		}
	}

	@Override
	public boolean query() {
		return tail().isDone();
	}

	@Override
	public void waitEvent(NativeEvent event) {
		CompletableFuture<Void> marker = ((CpuEvent) event).marker();
		if (marker.isDone()) {
			return;
		}
		synchronized (this.lock) {
			this.tail = this.tail.thenCombine(marker, (a, b) -> null);
		}
	}

	/** Captures the current end of the queue for an event. */
	CompletableFuture<Void> mark() {
		return tail();
	}

	/**
	 * Appends {@code onReach} to the queue, to run the moment the work before it is done and before
	 * any work enqueued later starts, and captures the end of the queue after it. Timing events use
	 * it, so that a stamp is never taken after the next operation has already run.
	 */
	CompletableFuture<Void> mark(Runnable onReach) {
		synchronized (this.lock) {
			this.tail = this.tail.thenRun(onReach);
			return this.tail;
		}
	}

	@Override
	public void whenDone(Consumer<GpuException> callback) {
		tail().whenComplete((result, failure) -> {
			GpuException error;
			synchronized (this.lock) {
				error = this.pendingError;
			}
			callback.accept(error);
		});
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
