package dev.gpucompute.spi;

/** A backend's stream handle. */
public interface NativeStream {

	/** The label given at creation, used in error messages. */
	String name();

	/**
	 * Blocks until all work enqueued so far is done.
	 * @throws dev.gpucompute.KernelLaunchException when a kernel on this stream failed since the
	 * last synchronisation (reported once; the stream stays usable unless the failure is sticky)
	 */
	void synchronize();

	/** Whether all work enqueued so far is done. */
	boolean query();

	/** Makes all future work on this stream wait for {@code event}'s most recent record. */
	void waitEvent(NativeEvent event);

	/**
	 * Runs {@code callback} on a backend thread once all work enqueued so far is done, also when it
	 * failed. The callback receives the first failure among that work ({@code null} when it all
	 * succeeded), without consuming it: {@link #synchronize()} still reports it. The callback must not
	 * call into the backend and must be short (the caller hands anything longer to an executor).
	 */
	void whenDone(java.util.function.Consumer<dev.gpucompute.GpuException> callback);

	/** Destroys a stream created by {@link DeviceBackend#createStream}; its work must be done. */
	void destroy();

}
