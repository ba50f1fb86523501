package dev.gpucompute.internal.pool;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.concurrent.ScheduledFuture;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuStream;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.StreamLease;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.core.Tracked;
import dev.gpucompute.internal.stream.LeaseState;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.spi.HostThreads;
import org.jspecify.annotations.Nullable;

/** The implementation of {@link StreamLease}. */
public final class Lease implements StreamLease {

	private final Release release;

	private final StreamHandle stream;

	private final Cleaner.@Nullable Cleanable cleanable;

	public Lease(Pool pool, PoolSlot slot, long acquiredAt, @Nullable Throwable site) {
		if (site == null) {
			site = Leaks.site(LeakRegistry.active(), "Stream lease");
		}
		this.release = new Release(pool, slot, acquiredAt, site, HostThreads.name(Thread.currentThread()));
		this.stream = pool.streams().pooled(slot.stream, slot.priority, this.release);
		this.cleanable = (site != null) ? Leaks.CLEANER.register(this, this.release) : null;
		LeakRegistry.acquired(this.release);
	}

	@Override
	public GpuStream stream() {
		return this.stream;
	}

	@Override
	public boolean isClosed() {
		return this.release.isClosed();
	}

	@Override
	public long heldNanos() {
		return System.nanoTime() - this.release.acquiredAt;
	}

	public void leakTask(ScheduledFuture<?> task) {
		this.release.leakTask = task;
	}

	public @Nullable Throwable site() {
		return this.release.site;
	}

	public Release release() {
		return this.release;
	}

	@Override
	public void close() {
		if (this.release.returnStream() && this.cleanable != null) {
			this.cleanable.clean();
		}
	}

	@Override
	public String toString() {
		return "StreamLease[" + this.stream.name() + (isClosed() ? ", closed" : "") + "]";
	}

	/**
	 * The part that outlives the lease object for the {@link Leaks#CLEANER}; it must not refer to it.
	 * Its closed flag is decided under the pool's lock (see {@link Pool#release}), which the
	 * return takes anyway: a separate compare-and-set would add a second fence to every close.
	 */
	public static final class Release implements Runnable, Tracked, LeaseState {

		private static final VarHandle CLOSED;

		static {
			try {
				CLOSED = MethodHandles.lookup().findVarHandle(Release.class, "closed", boolean.class);
			}
			catch (ReflectiveOperationException ex) {
				throw new ExceptionInInitializerError(ex);
			}
		}

		private final Pool pool;

		private final PoolSlot slot;

		private final long acquiredAt;

		private final @Nullable Throwable site;

		private final String thread;

		/** Written only under the pool's lock; read without it through {@link #isClosed()}. */
		private boolean closed;

		private volatile @Nullable ScheduledFuture<?> leakTask;

		Release(Pool pool, PoolSlot slot, long acquiredAt, @Nullable Throwable site, String thread) {
			this.pool = pool;
			this.slot = slot;
			this.acquiredAt = acquiredAt;
			this.site = site;
			this.thread = thread;
		}

		long acquiredAt() {
			return this.acquiredAt;
		}

		String thread() {
			return this.thread;
		}

		PoolSlot slot() {
			return this.slot;
		}

		@Override
		public boolean isClosed() {
			return (boolean) CLOSED.getAcquire(this);
		}

		@Override
		public boolean streamDestroyed() {
			return this.slot.destroyed;
		}

		/** Marks this lease closed; the caller holds the pool's lock. False when it already was. */
		boolean markClosed() {
			if (this.closed) {
				return false;
			}
			CLOSED.setRelease(this, true);
			return true;
		}

		/** Returns the stream once; false when this lease was already closed. */
		boolean returnStream() {
			if (!this.pool.release(this, System.nanoTime() - this.acquiredAt)) {
				return false;
			}
			ScheduledFuture<?> task = this.leakTask;
			if (task != null) {
				task.cancel(false);
			}
			return true;
		}

		@Override
		public GpuContext context() {
			return this.pool.lifecycle().owner();
		}

		@Override
		public LeakTracker.Kind kind() {
			return LeakTracker.Kind.STREAM_LEASE;
		}

		@Override
		public boolean isOpen() {
			return !isClosed();
		}

		@Override
		public String describe() {
			return "Stream lease of " + this.slot.stream.name();
		}

		@Override
		public @Nullable Throwable acquisitionSite() {
			return this.site;
		}

		/** Called by the cleaner when the lease became unreachable without being closed. */
		@Override
		public void run() {
			if (returnStream()) {
				Leaks.report("Stream lease of " + this.slot.stream.name(), this.site);
			}
		}

	}

}
