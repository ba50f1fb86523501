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
public interface StreamScope extends AutoCloseable {

	/** Ends the scope: the stream current before it is current again. */
	void close();

}
