package dev.gpucompute.sample.search;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;

/**
 * How the service waits for its device work, so that none outlives the collection lock that protects
 * its data: a write, a read or a search enqueues its work, then waits for its stream whether the
 * enqueueing succeeded or not ({@link #runThenSynchronize}), then for its downloads ({@link #await}).
 *
 * <p>Stateless; every method works on what it is given, on the calling thread.
 */
final class DeviceWork {

	private DeviceWork() {
	}

	/**
	 * Runs {@code enqueue}, then waits for {@code stream}, also when {@code enqueue} threw: part of the
	 * work may already be on the stream, and nothing may still run on the data once the caller's lock
	 * is released. Throws {@code enqueue}'s failure, with a failure of the wait added as suppressed;
	 * else the wait's failure, if any.
	 * @param stream the stream that, once synchronized, has run all of the work
	 */
	static void runThenSynchronize(GpuStream stream, Runnable enqueue) {
		RuntimeException failure = null;
		try {
			enqueue.run();
		}
		catch (RuntimeException ex) {
			failure = ex;
		}
		try {
			stream.synchronize();
		}
		catch (RuntimeException ex) {
			if (failure == null) {
				throw ex;
			}
			failure.addSuppressed(ex);
		}
		if (failure != null) {
			throw failure;
		}
	}

	/**
	 * Waits for every download, at most {@code timeout} for all of them, then throws the first failure.
	 * Each future is waited on itself, not through {@code allOf}: a thread waiting on a copy's own future
	 * is the one the runtime lets finish the copy (on CUDA it then sees the copy done within a poll,
	 * without the two thread wake-ups of the completion hand-off; see docs/runtime.md, "Completions").
	 * @throws GpuException when they did not all complete in time, or the thread was interrupted (its
	 * interrupt status is set again)
	 */
	static void await(List<CompletableFuture<Void>> downloads, Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		RuntimeException failure = null;
		for (CompletableFuture<Void> download : downloads) {
			try {
				download.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
			}
			catch (ExecutionException | CompletionException ex) {
				if (failure == null) {
					Throwable cause = ex.getCause();
					failure = (cause instanceof RuntimeException runtime) ? runtime
							: new GpuException("Downloading search results failed", cause);
				}
			}
			catch (TimeoutException ex) {
				throw new GpuException("Search results did not arrive within " + timeout);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new GpuException("Interrupted while waiting for search results");
			}
		}
		if (failure != null) {
			throw failure;
		}
	}

}
