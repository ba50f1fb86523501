package dev.gpucompute.spi;

import org.jspecify.annotations.Nullable;

/**
 * An instantiated graph, launched as a whole on any stream of its device.
 *
 * <p>Launches of one instantiated graph run one at a time, in the order they were enqueued, whatever
 * their streams (a launch on a second stream waits for the previous launch, as CUDA orders launches of
 * one {@code CUgraphExec}); each launch is also ordered after the work enqueued on its stream before
 * it. A failure of an operation inside a launch is reported like a kernel failure on that stream
 * (at its next synchronisation, completion or event wait). Thread-safe.
 */
public interface NativeGraphExec {

	/** Enqueues one run of the whole graph on {@code stream}. */
	void launch(NativeStream stream);

	/**
	 * Prepares the graph's resources on the device ahead of its first launch ({@code cuGraphUpload}),
	 * enqueued on {@code stream}, so that the first launch costs what later ones do. The default does
	 * nothing.
	 */
	default void upload(NativeStream stream) {
	}

	/**
	 * Takes the operations' parameters (kernel arguments, copy addresses) from {@code graph}, a new
	 * capture of the same shape, for the launches enqueued from now on; launches already enqueued run
	 * as they were.
	 * @return {@link Update#APPLIED}, or a refusal saying why (another shape, another kernel, a backend
	 * that cannot update); the caller then instantiates {@code graph} anew
	 */
	Update update(NativeGraph graph);

	/**
	 * Releases the instantiated graph; launches already enqueued still run (CUDA frees it when they
	 * end). Idempotent.
	 */
	void destroy();

	/**
	 * The outcome of {@link #update}.
	 *
	 * @param applied whether the graph was updated in place
	 * @param reason why not, in words; {@code null} when applied
	 */
	record Update(boolean applied, @Nullable String reason) {

		/** Updated in place. */
		public static final Update APPLIED = new Update(true, null);

		/** Refused for {@code reason}. */
		public static Update refused(String reason) {
			return new Update(false, reason);
		}

	}

}
