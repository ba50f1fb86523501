package dev.gpucompute.internal.pool;

import java.util.AbstractList;
import java.util.ArrayList;
import java.util.List;

import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool.StreamLeases;

/** The implementation of {@link StreamLeases}. */
public final class Leases extends AbstractList<StreamLease> implements StreamLeases {

	private final List<StreamLease> leases;

	public Leases(List<StreamLease> leases) {
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

	@Override
	public GpuStream stream(int index) {
		return this.leases.get(index).stream();
	}

	@Override
	public List<GpuStream> streams() {
		List<GpuStream> streams = new ArrayList<>(this.leases.size());
		for (StreamLease lease : this.leases) {
			streams.add(lease.stream());
		}
		return List.copyOf(streams);
	}

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
