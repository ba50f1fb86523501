package dev.gpucompute;



/**
 * Exclusive use of one pooled stream until {@link #close()}. Use it with try-with-resources:
 *
 * <pre>{@code
 * try (StreamLease lease = pool.acquire()) {
 *     launcher.withStream(lease.stream(), () -> launcher.launch(kernel, config, args));
 *     lease.stream().synchronize();
 * }
 * }</pre>
 *
 * <p>Closing returns the stream to the pool without waiting for its work: the next holder's work
 * simply queues behind it. Closing twice is harmless and never returns the stream twice. After
 * closing, the stream handle raises {@link GpuException} on use. A lease is meant for one thread at
 * a time, but closing it from another thread is safe.
 *
 * <p>With leak detection on ({@code gpu.streams.leak-detection-threshold} > 0), a lease that becomes
 * unreachable without being closed is also returned to the pool by a cleaner and logged with its
 * acquisition site. Without it, such a stream stays out of the pool until the context closes: the
 * safety net costs more than the lease itself, so it is paid only when asked for.
 */
public interface StreamLease extends AutoCloseable {

	/** The leased stream; valid until this lease is closed. */
	GpuStream stream();

	/** Whether this lease has been closed. */
	boolean isClosed();

	/** Nanos since the lease was granted ({@link System#nanoTime()} based). */
	long heldNanos();

	/** Returns the stream to the pool. Idempotent. */
	void close();


}
