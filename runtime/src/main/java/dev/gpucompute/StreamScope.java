package dev.gpucompute;

/**
 * Makes a stream the calling thread's current stream until closed, then restores the previous
 * one. For try-with-resources:
 *
 * <pre>{@code
 * try (StreamLease lease = pool.acquire(); StreamScope scope = launcher.useStream(lease.stream())) {
 *     launcher.launch(kernel, config, args);   // goes to lease.stream()
 * }
 * }</pre>
 *
 * Must be closed on the thread that opened it; closing twice is harmless.
 */
public final class StreamScope implements AutoCloseable {

	private final ContextLauncher launcher;

	private final GpuStream previous;

	private final Thread thread;

	private boolean closed;

	StreamScope(ContextLauncher launcher, GpuStream previous) {
		this.launcher = launcher;
		this.previous = previous;
		this.thread = Thread.currentThread();
	}

	@Override
	public void close() {
		if (this.closed) {
			return;
		}
		if (Thread.currentThread() != this.thread) {
			throw new GpuException("A stream scope must be closed on the thread that opened it ('"
					+ this.thread.getName() + "'), not on '" + Thread.currentThread().getName() + "'");
		}
		this.closed = true;
		this.launcher.restore(this.previous);
	}

}
