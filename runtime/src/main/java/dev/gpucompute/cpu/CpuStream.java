package dev.gpucompute.cpu;

import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Supplier;

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
	 * Appends an operation. {@code start} must not block: it dispatches the work and returns a
	 * future that completes (normally or not) when the work is done.
	 */
	void enqueue(Supplier<CompletableFuture<Void>> start) {
		synchronized (this.lock) {
			this.tail = this.tail.thenCompose((ignored) -> {
				CompletableFuture<Void> work;
				try {
					work = start.get();
				}
				catch (RuntimeException ex) {
					fail(ex);
					return DONE;
				}
				return work.handle((result, failure) -> {
					if (failure != null) {
						fail(failure);
					}
					return null;
				});
			});
		}
	}

	/** Appends a host task run by one worker. */
	void enqueueTask(Runnable task) {
		enqueue(() -> {
			CompletableFuture<Void> done = new CompletableFuture<>();
			this.backend.execute(this.priority, () -> {
				try {
					task.run();
					done.complete(null);
				}
				catch (Throwable ex) {
					done.completeExceptionally(ex);
				}
			});
			return done;
		});
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
