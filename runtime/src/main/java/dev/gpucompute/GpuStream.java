package dev.gpucompute;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;

import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

/**
 * An ordered queue of GPU work: work on one stream runs in submission order; work on different
 * streams may overlap. Ordering across streams is expressed with {@link GpuEvent}s or
 * {@link #waitFor(GpuStream)}, never by blocking the host.
 *
 * <p>Ownership: a pooled stream belongs to its {@link StreamLease} and may be used until the lease
 * is closed (after that every use raises {@link GpuException}); default streams belong to the
 * context. A per-thread default stream may only be used from its own thread. Methods are
 * thread-safe, but work enqueued concurrently from several threads has no defined order among
 * those threads.
 */
public final class GpuStream {

	private final GpuContext context;

	private final NativeStream stream;

	private final StreamKind kind;

	private final StreamPriority priority;

	/**
	 * The lease of a pooled stream, whose closing ends this handle's validity. Its release part, not
	 * the lease itself: a stream left current by an unclosed scope must not keep the lease reachable,
	 * or the leak safety net could never return it.
	 */
	private final StreamLease.Release lease;

	/** The thread a per-thread default stream belongs to. */
	private final Thread owner;

	GpuStream(GpuContext context, NativeStream stream, StreamKind kind, StreamPriority priority,
			StreamLease.Release lease, Thread owner) {
		this.context = context;
		this.stream = stream;
		this.kind = kind;
		this.priority = priority;
		this.lease = lease;
		this.owner = owner;
	}

	public String name() {
		return this.stream.name();
	}

	public StreamKind kind() {
		return this.kind;
	}

	public StreamPriority priority() {
		return this.priority;
	}

	/** The context this stream belongs to. */
	public GpuContext context() {
		return this.context;
	}

	/**
	 * Blocks until all work enqueued so far is done.
	 * @throws KernelLaunchException when a kernel among that work failed and its failure was not
	 * reported yet (by an earlier synchronisation, a completion or download future, or an event
	 * wait): each failure is reported once, to the holder of the stream whose work depends on it,
	 * never to a later holder of a pooled stream; the stream stays usable afterwards (unless the
	 * device hit a sticky error, see {@link GpuContext#healthProblem()})
	 * @throws ContextClosedException when the context closed and abandoned the work
	 */
	public void synchronize() {
		use().synchronize();
	}

	/** Whether all work enqueued so far is done, without blocking. */
	public boolean isIdle() {
		return use().query();
	}

	/** Records {@code event} here: it completes when the work enqueued so far is done. */
	public GpuStream record(GpuEvent event) {
		Objects.requireNonNull(event, "event");
		event.record(this);
		return this;
	}

	/**
	 * Makes all work enqueued here from now on wait until {@code event} completes (its most recent
	 * record). The host does not block. An event never recorded is already complete. The event may
	 * belong to another device of the same {@link GpuDevices}.
	 */
	public GpuStream waitFor(GpuEvent event) {
		Objects.requireNonNull(event, "event");
		NativeStream target = use();
		NativeEvent marker = event.useForWait(this.context);
		if (event.isRecorded()) {
			target.waitEvent(marker);
		}
		return this;
	}

	/**
	 * Makes all work enqueued here from now on wait until the work enqueued on {@code other} so far
	 * is done. The host does not block. {@code other} may belong to another device of the same
	 * {@link GpuDevices}.
	 */
	public GpuStream waitFor(GpuStream other) {
		Objects.requireNonNull(other, "other");
		NativeStream target = use();
		NativeStream source = other.use();
		this.context.ensureSameOrPeer(other.context, "Stream " + other.name());
		if (source == target) {
			return this;
		}
		// The marker is recorded on the other stream, so it comes from that stream's device.
		other.context.events().order(target, source);
		return this;
	}

	/**
	 * A future that completes when the work enqueued so far is done; exceptionally with the
	 * {@link GpuException} of a failed kernel among that work (which then counts as reported, see
	 * {@link #synchronize()}), or with a {@link ContextClosedException} when the context closed and
	 * abandoned the work. It always completes. Dependent stages run on the context's completion
	 * threads, or on a thread that waits for the future in {@code join}/{@code get} and finishes it
	 * itself, never on a backend thread.
	 */
	public CompletableFuture<Void> completion() {
		this.context.beginWork();
		try {
			return this.context.whenDone(use(), (CompletableFuture<Void> done, GpuException failure) -> {
				if (failure != null) {
					done.completeExceptionally(failure);
				}
				else {
					done.complete(null);
				}
			});
		}
		finally {
			this.context.endWork();
		}
	}

	/**
	 * This stream as a handle of the backend's own API, for work that code outside the runtime
	 * enqueues on it (a JCuda call, cuBLAS through JCublas, another CUDA library), so that it runs in
	 * order with the runtime's work on this stream:
	 * <ul>
	 * <li>CUDA: {@code jcuda.driver.CUstream} (for a default stream, JCuda's {@code CU_STREAM_PER_THREAD}
	 * or {@code CU_STREAM_LEGACY} handle: a per-thread one means the stream of the thread that enqueues,
	 * so use it only on this stream's own thread, as this method checks);
	 * <li>CPU backend: none, so always empty.
	 * </ul>
	 * Asking makes the device's context current on the calling thread (CUDA), for the driver calls that
	 * follow. The runtime still owns the stream: never destroy or synchronise it through the handle in a way
	 * the runtime does not see (its {@link #synchronize()} is the way to wait). The handle is valid while
	 * this stream is: for a pooled stream until its lease is closed, after which the pool hands the
	 * stream to the next holder and work enqueued through an old handle is the caller's fault. A
	 * failure of such work is not attributed to a kernel of the runtime.
	 * @return the handle, or empty when the backend has none of that type
	 * @throws GpuException when this stream cannot be used (lease closed, context closed, another
	 * thread's per-thread default stream)
	 */
	public <T> java.util.Optional<T> nativeHandle(Class<T> type) {
		Objects.requireNonNull(type, "type");
		return java.util.Optional.ofNullable(use().nativeHandle(type));
	}

	/** The backend stream, after checking this handle may be used by the calling thread. */
	NativeStream use() {
		this.context.ensureOpen();
		if (this.lease != null && this.lease.isClosed()) {
			throw new GpuException("Stream " + name() + " was used after its lease was closed; a pooled stream "
					+ "belongs to its lease only while the lease is open");
		}
		if (this.owner != null && this.owner != Thread.currentThread()) {
			throw new GpuException("Stream " + name() + " is the per-thread default stream of thread '"
					+ this.owner.getName() + "' and cannot be used from thread '" + Thread.currentThread().getName()
					+ "'; lease a pooled stream to share work across threads");
		}
		return this.stream;
	}

	/** The backend stream without checks, for the pool's own bookkeeping. */
	NativeStream raw() {
		return this.stream;
	}

	/**
	 * Whether work can still be enqueued on the backend stream from the calling thread without the
	 * handle's checks: false for another thread's per-thread default stream and for a pooled
	 * stream the pool has destroyed since.
	 */
	boolean reachableFromHere() {
		if (this.owner != null && this.owner != Thread.currentThread() && !this.stream.usableFromAnyThread()) {
			return false;
		}
		return this.lease == null || !this.lease.slot().destroyed;
	}

	/** Whether this is a pooled stream whose lease was closed. */
	boolean leaseClosed() {
		return this.lease != null && this.lease.isClosed();
	}

	Thread owner() {
		return this.owner;
	}

	@Override
	public String toString() {
		return "GpuStream[" + name() + ", " + this.kind + "]";
	}

}
