package dev.gpucompute.internal.core;

import dev.gpucompute.GpuStream;
import org.jspecify.annotations.Nullable;

/**
 * Something a captured graph uses (a device buffer, a host buffer range a copy reads or writes),
 * prepared at every replay: the memory room implements it, the graph room calls it. Kept apart from
 * the graph, so that a replay checks and orders its buffers without knowing what they are.
 */
public interface GraphUse {

	/**
	 * Before a replay is enqueued on {@code stream}: checks the resource is still usable and orders
	 * it (a buffer's first use on that stream waits for its owning stream's work).
	 * @return a token for {@link #afterReplay} when the resource must be told when the replay ends
	 * (a host buffer a copy reads or writes), else {@code null}
	 * @throws dev.gpucompute.GpuException when it was closed
	 */
	@Nullable Object beforeReplay(GpuStream stream);

	/** The replay that {@link #beforeReplay} returned {@code token} for has ended (or was never enqueued). */
	default void afterReplay(Object token) {
	}

	/** Whether {@link #beforeReplay} returns tokens that {@link #afterReplay} must be given. */
	default boolean tracksReplays() {
		return false;
	}

	/** The identity that makes two uses the same (one device buffer used by several operations). */
	default Object identity() {
		return this;
	}

}
