package dev.gpucompute.spi;

import org.jspecify.annotations.Nullable;

/** A backend's stream handle. */
public interface NativeStream {

	/** The label given at creation, used in error messages. */
	String name();

	/**
	 * Blocks until all work enqueued so far is done, then reports the failures among that work that
	 * were not reported yet: the first is thrown, with any others attached as suppressed, and none of
	 * them is reported again (by a later synchronisation, {@link #whenDone} or event wait). Failures
	 * of work enqueued before the last {@link #discardFailures()} are never reported here. The
	 * stream stays usable unless the failure is sticky.
	 * @throws dev.gpucompute.KernelLaunchException when a kernel among that work failed
	 * @throws dev.gpucompute.ContextClosedException when the work was abandoned at close
	 */
	void synchronize();

	/** Whether all work enqueued so far is done. */
	boolean query();

	/** Makes all future work on this stream wait for {@code event}'s most recent record. */
	void waitEvent(NativeEvent event);

	/**
	 * Runs {@code callback} on a backend thread once all work enqueued so far is done, also when it
	 * failed. The callback receives the failures among that work not reported yet, as
	 * {@link #synchronize()} would throw them ({@code null} when there are none), and they count as
	 * reported. The callback must not call into the backend and must be short (the caller hands
	 * anything longer to an executor). When the backend abandons the work at close the callback may
	 * never run; the context completes its own waiters then.
	 */
	void whenDone(java.util.function.Consumer<dev.gpucompute.@Nullable GpuException> callback);

	/**
	 * Ends the current holder's claim on failures: failures of the work enqueued so far, now or when
	 * they happen, go only to waits registered before this call ({@link #whenDone} callbacks, events
	 * recorded before) and are dropped otherwise; a later {@link #synchronize()}, callback or event
	 * wait never reports them. Called when a pooled stream goes back to its pool, so that the next
	 * holder starts clean. A no-op where failures are sticky (they end the context anyway).
	 */
	void discardFailures();

	/**
	 * Whether any thread may enqueue work here. False for a handle whose meaning depends on the
	 * calling thread (CUDA's {@code CU_STREAM_PER_THREAD}, which names the caller's own stream): the
	 * runtime then orders work after it through the legacy default stream, which CUDA synchronises
	 * with every per-thread default stream.
	 */
	default boolean usableFromAnyThread() {
		return true;
	}

	/**
	 * This stream as a handle of the backend's own API, for code that enqueues work on it directly
	 * ({@code GpuStream.nativeHandle}), or {@code null} when the backend has none of that type. The
	 * stream still belongs to the runtime.
	 */
	default <T> @Nullable T nativeHandle(Class<T> type) {
		return null;
	}

	/**
	 * The capture this stream takes part in now (it began here, or this stream joined it by waiting for
	 * an event recorded in it), or {@code null}: work enqueued here is then recorded instead of run.
	 * Cheap (a field read); answers for the calling thread's view, exact on the capturing thread.
	 */
	default @Nullable NativeCapture capture() {
		return null;
	}

	/**
	 * Whether a pool may hand this stream to another holder when its lease is returned. False when the
	 * backend lost control of it (on CUDA: the driver may still hold a capture open on it, so work
	 * enqueued here would be recorded instead of run); the pool then destroys it and creates another
	 * when one is needed. Cheap (a field read); the default is {@code true}.
	 */
	default boolean isReusable() {
		return true;
	}

	/**
	 * Destroys a stream created by {@link DeviceBackend#createStream}. Work already enqueued on it may
	 * still run (the pool replaces an idle stream whose last holder returned it before its work
	 * ended) and still finishes, as {@code cuStreamDestroy} lets it: until it has, the backend's
	 * {@link DeviceBackend#awaitIdle} and {@link DeviceBackend#synchronizeDevice} wait for it, and its
	 * {@link #whenDone} callbacks run as on a live stream.
	 */
	void destroy();

}
