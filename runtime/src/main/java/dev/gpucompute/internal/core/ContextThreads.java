package dev.gpucompute.internal.core;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The threads a {@link dev.gpucompute.GpuContext} starts for itself (housekeeping, completions): daemon threads
 * named after the context, and their stop at close.
 */
public final class ContextThreads {

	private ContextThreads() {
	}

	/** Daemon threads named {@code prefix-1}, {@code prefix-2}, ... */
	public static ThreadFactory daemon(String prefix) {
		AtomicInteger n = new AtomicInteger();
		return (runnable) -> {
			Thread thread = new Thread(runnable, prefix + "-" + n.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		};
	}

	/** Waits a little for an executor that was shut down, then interrupts what still runs. */
	public static void awaitQuietly(ExecutorService executor) {
		try {
			if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
				executor.shutdownNow();
			}
		}
		catch (InterruptedException ex) {
			executor.shutdownNow();
			Thread.currentThread().interrupt();
		}
	}

}
