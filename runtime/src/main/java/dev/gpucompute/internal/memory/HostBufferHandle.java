package dev.gpucompute.internal.memory;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.gpucompute.GpuException;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.InvalidBufferRangeException;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.Leaks;
import org.jspecify.annotations.Nullable;

/** The implementation of {@link HostBuffer}. */
public final class HostBufferHandle implements HostBuffer {

	private final State state;

	private final Cleaner.Cleanable cleanable;

	HostBufferHandle(State state) {
		this.state = state;
		this.cleanable = Leaks.CLEANER.register(this, state);
	}

	@Override
	public long byteSize() {
		return this.state.bytes;
	}

	@Override
	public boolean isClosed() {
		return this.state.closed.get();
	}

	// ---- views ------------------------------------------------------------------------------------

	@Override
	public ByteBuffer asByteBuffer() {
		return this.state.view();
	}

	@Override
	public FloatBuffer asFloatBuffer() {
		return this.state.view().asFloatBuffer();
	}

	@Override
	public IntBuffer asIntBuffer() {
		return this.state.view().asIntBuffer();
	}

	@Override
	public LongBuffer asLongBuffer() {
		return this.state.view().asLongBuffer();
	}

	@Override
	public DoubleBuffer asDoubleBuffer() {
		return this.state.view().asDoubleBuffer();
	}

	// ---- bulk puts and gets: checked against pending copies -----------------------------------------

	@Override
	public HostBuffer put(long byteOffset, HostArray src) {
		Objects.requireNonNull(src, "src");
		CopyPipeline.source(src).pack(0, this.state.range(byteOffset, src.byteSize(), true));
		return this;
	}

	@Override
	public HostBuffer get(long byteOffset, HostArray dst) {
		Objects.requireNonNull(dst, "dst");
		CopyPipeline.sink(dst, "destination").unpack(0, this.state.range(byteOffset, dst.byteSize(), false));
		return this;
	}

	// ---- for copies ---------------------------------------------------------------------------------

	/**
	 * The runtime's host buffer behind {@code buffer}.
	 * @throws GpuException when it is not one of the runtime's host buffers
	 */
	static HostBufferHandle of(HostBuffer buffer) {
		if (buffer instanceof HostBufferHandle handle) {
			return handle;
		}
		throw new GpuException("Host buffer " + buffer + " was not allocated by the gpu-compute runtime");
	}

	/** The bookkeeping a copy uses, after checking this buffer may be used with the context of {@code lifecycle}. */
	State stateFor(ContextState lifecycle) {
		lifecycle.ensureSame(this.state.lifecycle, "Host buffer", "");
		this.state.checkUsable();
		return this.state;
	}

	/**
	 * Closes the buffer at once, without waiting for its copies: from now on every method but
	 * {@link #byteSize()}, {@link #isClosed()}, {@code toString} and {@code close} throws. Copies still
	 * pending keep the memory out of the pool until they end; it goes back to the context's pool then
	 * (see {@link HostBuffer}). Idempotent; a no-op once the context has closed (it released the memory).
	 */
	@Override
	public void close() {
		this.state.explicit = true;
		this.cleanable.clean();
	}

	@Override
	public String toString() {
		return "HostBuffer[" + byteSize() + " bytes" + (isClosed() ? ", closed" : "") + "]";
	}

	/**
	 * A copy that reads or writes a host buffer and has not ended yet; {@code what} names it in errors
	 * (its {@code toString}, built only then).
	 */
	record PendingCopy(Object what, boolean writesHost, long from, long to) {
	}

	/** What the release needs; shared with the leak cleaner and the context, so it must not refer to the buffer. */
	static final class State implements Runnable {

		final ContextState lifecycle;

		private final HostMemory owner;

		/** The pool's block, whose capacity may exceed {@link #bytes}. */
		final ByteBuffer block;

		/** The first {@link #bytes} bytes of {@link #block}, position 0. */
		private final ByteBuffer region;

		final long bytes;

		private final @Nullable Throwable site;

		final AtomicBoolean closed = new AtomicBoolean();

		private volatile boolean explicit;

		// guarded by this
		private final List<PendingCopy> pending = new ArrayList<>(2);

		// guarded by this: whether the block went back (to the pool, or with the context)
		private boolean released;

		State(ContextState lifecycle, HostMemory owner, ByteBuffer block, long bytes, @Nullable Throwable site) {
			this.lifecycle = lifecycle;
			this.owner = owner;
			this.block = block;
			this.region = block.duplicate().clear().limit((int) bytes).slice();
			this.bytes = bytes;
			this.site = site;
		}

		void checkUsable() {
			this.lifecycle.ensureOpen();
			if (this.closed.get()) {
				throw new GpuException("Host buffer of " + this.bytes + " bytes used after it was closed");
			}
		}

		ByteBuffer view() {
			checkUsable();
			return this.region.duplicate().order(ByteOrder.nativeOrder());
		}

		/** The memory from {@code offset} on, for a copy's DMA; position 0. */
		ByteBuffer at(long offset) {
			return this.region.duplicate().position((int) offset).slice();
		}

		/**
		 * A native-order view of {@code bytes} bytes at {@code offset} for a put ({@code write}) or a
		 * get, after checking the range and the copies pending on it.
		 */
		ByteBuffer range(long offset, long bytes, boolean write) {
			checkUsable();
			checkRange(offset, bytes, write ? "write" : "read");
			synchronized (this) {
				for (PendingCopy copy : this.pending) {
					if ((write || copy.writesHost) && copy.from < offset + bytes && offset < copy.to) {
						throw new GpuException("Host buffer of " + this.bytes + " bytes: cannot " + (write ? "write" : "read")
								+ " bytes " + offset + " to " + (offset + bytes) + " while the " + copy.what
								+ " is pending on them; wait for that copy's future first");
					}
				}
			}
			return this.region.duplicate().position((int) offset).limit((int) (offset + bytes)).slice()
				.order(ByteOrder.nativeOrder());
		}

		/** Rejects {@code bytes} bytes at {@code offset} unless they lie within the buffer; {@code what} names the access. */
		void checkRange(long offset, long bytes, String what) {
			if (offset < 0 || bytes < 0 || offset > this.bytes || bytes > this.bytes - offset) {
				throw new InvalidBufferRangeException("The " + what + " of " + bytes + " bytes at offset " + offset
						+ " does not fit a host buffer of " + this.bytes + " bytes");
			}
		}

		/** Registers a copy before it is enqueued; it ends with {@link #end}. */
		PendingCopy begin(Object what, boolean writesHost, long offset, long bytes) {
			PendingCopy copy = new PendingCopy(what, writesHost, offset, offset + bytes);
			synchronized (this) {
				checkUsable();
				this.pending.add(copy);
			}
			return copy;
		}

		/** A copy has ended (or was never enqueued): releases the memory if the buffer was closed meanwhile. */
		void end(PendingCopy copy) {
			boolean release;
			synchronized (this) {
				this.pending.remove(copy);
				release = this.closed.get() && this.pending.isEmpty() && !this.released;
				this.released |= release;
			}
			if (release) {
				this.owner.release(this);
			}
		}

		@Override
		public void run() {
			if (!this.closed.compareAndSet(false, true)) {
				return;
			}
			if (!this.explicit) {
				Leaks.report("Host buffer of " + this.bytes + " bytes", this.site);
			}
			boolean release;
			synchronized (this) {
				release = this.pending.isEmpty() && !this.released;
				this.released |= release;
			}
			if (release) {
				this.owner.release(this);
			}
		}

		/** The context is closing and releases the block itself; returns whether it still had it. */
		boolean releaseAtShutdown() {
			this.closed.set(true);
			synchronized (this) {
				boolean had = !this.released;
				this.released = true;
				return had;
			}
		}

	}

}
