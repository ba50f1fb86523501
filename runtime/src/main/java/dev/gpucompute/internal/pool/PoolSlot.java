package dev.gpucompute.internal.pool;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * One stream of a {@link Pool} and its bookkeeping: whether it is leased and by which lease,
 * its lease count and time held, its busy share and whether it was destroyed. The pool's lock guards
 * the plain fields; the others say how they are read.
 */
final class PoolSlot {

	/** {@link #current}: a release store and an acquire load, which cost no fence on the lease path. */
	static final VarHandle CURRENT;

	static {
		try {
			CURRENT = MethodHandles.lookup().findVarHandle(PoolSlot.class, "current", Lease.Release.class);
		}
		catch (ReflectiveOperationException ex) {
			throw new ExceptionInInitializerError(ex);
		}
	}

	final NativeStream stream;

	final StreamPriority priority;

	// Guarded by the pool lock. Plain fields: a volatile write costs a fence, and the lease path
	// would pay three of them for figures that only stats() reads, under the same lock.
	boolean leased;

	long leases;

	long heldNanos;

	/** Written by the housekeeping thread only. */
	volatile double busyShare;

	/** Set when the stream is destroyed (evicted or at close); handles still pointing at it must not enqueue. */
	volatile boolean destroyed;

	/** The lease holding the stream now, for {@link Pool#leases()}; accessed through {@link #CURRENT}. */
	@SuppressWarnings("unused")
	private Lease.@Nullable Release current;

	Lease.Release current() {
		return (Lease.Release) CURRENT.getAcquire(this);
	}

	PoolSlot(NativeStream stream, StreamPriority priority) {
		this.stream = stream;
		this.priority = priority;
	}

}
