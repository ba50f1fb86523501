package dev.gpucompute;

import java.util.concurrent.CompletableFuture;

/**
 * An ordered queue of GPU work: work on one stream runs in submission order; work on different
 * streams may overlap. Ordering across streams is expressed with {@link GpuEvent}s or
 * {@link #waitFor(GpuStream)}, never by blocking the host.
 *
 * <p>Ownership: a pooled stream belongs to its {@link StreamLease} and may be used until the lease
 * is closed (after that every use raises {@link GpuException}); default streams belong to the
 * context. A per-thread default stream may only be used from its own thread. Methods are
 * thread-safe, but work enqueued concurrently from several threads has no defined order among
 * those threads.
 */
public interface GpuStream {

	/** A name for logs and reports. */
	String name();

	/** Whether it is a pooled stream or a default stream (legacy or per thread). */
	Kind kind();

	/** The priority its work runs at on the device. */
	StreamPriority priority();

	/** The context this stream belongs to. */
	GpuContext context();

	/**
	 * Blocks until all work enqueued so far is done.
	 * @throws KernelLaunchException when a kernel among that work failed and its failure was not
	 * reported yet (by an earlier synchronisation, a completion or download future, or an event
	 * wait): each failure is reported once, to the holder of the stream whose work depends on it,
	 * never to a later holder of a pooled stream; the stream stays usable afterwards (unless the
	 * device hit a sticky error, see {@link GpuContext#healthProblem()})
	 * @throws ContextClosedException when the context closed and abandoned the work
	 */
	void synchronize();

	/** Whether all work enqueued so far is done, without blocking. */
	boolean isIdle();

	/** Records {@code event} here: it completes when the work enqueued so far is done. */
	GpuStream record(GpuEvent event);

	/**
	 * Makes all work enqueued here from now on wait until {@code event} completes (its most recent
	 * record). The host does not block. An event never recorded is already complete. The event may
	 * belong to another device of the same {@link GpuDevices}.
	 */
	GpuStream waitFor(GpuEvent event);

	/**
	 * Makes all work enqueued here from now on wait until the work enqueued on {@code other} so far
	 * is done. The host does not block. {@code other} may belong to another device of the same
	 * {@link GpuDevices}.
	 */
	GpuStream waitFor(GpuStream other);

	/**
	 * A future that completes when the work enqueued so far is done; exceptionally with the
	 * {@link GpuException} of a failed kernel among that work (which then counts as reported, see
	 * {@link #synchronize()}), or with a {@link ContextClosedException} when the context closed and
	 * abandoned the work. It always completes. Dependent stages run on the context's completion
	 * threads, or on a thread that waits for the future in {@code join}/{@code get} and finishes it
	 * itself, never on a backend thread.
	 */
	CompletableFuture<Void> completion();

	/**
	 * This stream as a handle of the backend's own API, for work that code outside the runtime
	 * enqueues on it (a JCuda call, cuBLAS through JCublas, another CUDA library), so that it runs in
	 * order with the runtime's work on this stream:
	 * <ul>
	 * <li>CUDA: {@code jcuda.driver.CUstream} (for a default stream, JCuda's {@code CU_STREAM_PER_THREAD}
	 * or {@code CU_STREAM_LEGACY} handle: a per-thread one means the stream of the thread that enqueues,
	 * so use it only on this stream's own thread, as this method checks);
	 * <li>CPU backend: none, so always empty.
	 * </ul>
	 * Asking makes the device's context current on the calling thread (CUDA), for the driver calls that
	 * follow. The runtime still owns the stream: never destroy or synchronise it through the handle in a way
	 * the runtime does not see (its {@link #synchronize()} is the way to wait). The handle is valid while
	 * this stream is: for a pooled stream until its lease is closed, after which the pool hands the
	 * stream to the next holder and work enqueued through an old handle is the caller's fault. A
	 * failure of such work is not attributed to a kernel of the runtime.
	 * @return the handle, or empty when the backend has none of that type
	 * @throws GpuException when this stream cannot be used (lease closed, context closed, another
	 * thread's per-thread default stream)
	 */
	<T> java.util.Optional<T> nativeHandle(Class<T> type);

	String toString();

	/** Where a {@link GpuStream} came from. */
	public enum Kind {

		/** Leased from the {@link StreamPool}; non-blocking. */
		POOLED,

		/** The legacy default stream, shared by every host thread; synchronises with blocking streams. */
		DEFAULT_LEGACY,

		/** The calling thread's own default stream. */
		DEFAULT_PER_THREAD,

		/** Created outside the pool and owned by the caller. */
		EXTERNAL

	}

}
