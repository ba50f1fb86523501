package dev.gpucompute;

import java.util.List;

/**
 * Several stream leases taken at once ({@link StreamPool#acquireAll(int)}), closed together:
 *
 * <pre>{@code
 * try (StreamLeases leases = pool.acquireAll(3)) {
 *     for (StreamLease lease : leases) { ... lease.stream() ... }
 * }
 * }</pre>
 *
 * <p>An unmodifiable list of the leases, in the order they were granted. {@link #close()} closes
 * every lease, also when closing one of them fails (a throwing {@link GpuListener}, say): the first
 * failure is rethrown after all were closed, with the others attached as suppressed. Closing twice
 * is harmless, as for one lease. The code that acquired the group owns it and closes it; closing a
 * lease of the group on its own first is allowed.
 */
public interface StreamLeases extends List<StreamLease>, AutoCloseable {



	/** The stream of lease {@code index}: {@code get(index).stream()}. */
	GpuStream stream(int index);

	/** The leased streams, in the order of the leases. */
	List<GpuStream> streams();

	/** Closes every lease; see the class comment for failures. Idempotent. */
	void close();

}
