package dev.gpucompute;

import java.util.AbstractList;
import java.util.ArrayList;
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
public final class StreamLeases extends AbstractList<StreamLease> implements AutoCloseable {

	private final List<StreamLease> leases;

	StreamLeases(List<StreamLease> leases) {
		this.leases = List.copyOf(leases);
	}

	@Override
	public StreamLease get(int index) {
		return this.leases.get(index);
	}

	@Override
	public int size() {
		return this.leases.size();
	}

	/** The stream of lease {@code index}: {@code get(index).stream()}. */
	public GpuStream stream(int index) {
		return this.leases.get(index).stream();
	}

	/** The leased streams, in the order of the leases. */
	public List<GpuStream> streams() {
		List<GpuStream> streams = new ArrayList<>(this.leases.size());
		for (StreamLease lease : this.leases) {
			streams.add(lease.stream());
		}
		return List.copyOf(streams);
	}

	/** Closes every lease; see the class comment for failures. Idempotent. */
	@Override
	public void close() {
		RuntimeException failure = null;
		for (StreamLease lease : this.leases) {
			try {
				lease.close();
			}
			catch (RuntimeException ex) {
				if (failure == null) {
					failure = ex;
				}
				else {
					failure.addSuppressed(ex);
				}
			}
		}
		if (failure != null) {
			throw failure;
		}
	}

}
