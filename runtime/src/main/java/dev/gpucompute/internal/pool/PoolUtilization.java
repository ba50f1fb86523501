package dev.gpucompute.internal.pool;

import java.util.List;

import dev.gpucompute.internal.core.ContextState;

/**
 * How busy the streams of a {@link Pool} are: the utilisation sample that the context's
 * housekeeping thread takes (an exponential average per stream, in {@link PoolSlot#busyShare}), and
 * whether any stream has work in flight now. Each query asks every stream, so none of this belongs
 * on the launch or lease path.
 */
final class PoolUtilization {

	private final ContextState lifecycle;

	/** Every stream of the pool, leased or idle; only read here. */
	private final List<PoolSlot> all;

	PoolUtilization(ContextState lifecycle, List<PoolSlot> all) {
		this.lifecycle = lifecycle;
		this.all = all;
	}

	/** Samples whether each pooled stream has work in flight; an exponential average per stream. */
	void sample(double alpha) {
		if (!this.lifecycle.isOpen()) {
			return;
		}
		for (PoolSlot slot : this.all) {
			try {
				double busy = slot.stream.query() ? 0 : 1;
				slot.busyShare += alpha * (busy - slot.busyShare);
			}
			catch (RuntimeException ex) {
				// A stream destroyed between the snapshot and the query; it is gone from the next sample.
			}
		}
	}

	/** See {@link Pool#anyBusy()}. */
	boolean anyBusy() {
		for (PoolSlot slot : this.all) {
			try {
				if (!slot.stream.query()) {
					return true;
				}
			}
			catch (RuntimeException ex) {
				// Destroyed meanwhile, or the device failed: nothing in flight that a load would wait for.
			}
		}
		return false;
	}

}
