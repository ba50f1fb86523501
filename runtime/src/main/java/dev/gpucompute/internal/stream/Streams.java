package dev.gpucompute.internal.stream;

import java.util.Objects;
import java.util.function.Supplier;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.StreamScope;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.HostThreads;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The streams of one context, as the other rooms see them: the handles of pooled streams (for the
 * pool's leases), the default streams, and each thread's current stream ({@link #useStream} scopes,
 * which launches and copies without a stream go to). Also counts the pooled streams a thread holds
 * through a stream-parallel group, for the pool's check of leases a thread could only wait for.
 *
 * <p>Thread-safe; the current stream and the group count are per thread.
 */
public final class Streams {

	private final ContextState lifecycle;

	private final ContextCompletions completions;

	private final Events events;

	private final DefaultStreamMode mode;

	private final @Nullable StreamHandle legacy;

	private final ThreadLocal<StreamHandle> perThread;

	/** Each thread's current stream set by a scope; absent: its default stream. */
	private final ThreadLocal<StreamHandle> current = new ThreadLocal<>();

	/** Set while the thread runs a stream-parallel group: the pooled streams the group holds (0 while it leases them). */
	private final ThreadLocal<Integer> inGroup = new ThreadLocal<>();

	public Streams(ContextState lifecycle, ContextCompletions completions, Events events, DeviceBackend backend,
			DefaultStreamMode mode) {
		this.lifecycle = lifecycle;
		this.completions = completions;
		this.events = events;
		this.mode = mode;
		this.legacy = (mode == DefaultStreamMode.LEGACY) ? handle(backend.defaultStream(DefaultStreamMode.LEGACY),
				GpuStream.Kind.DEFAULT_LEGACY, StreamPriority.NORMAL, null, null) : null;
		this.perThread = ThreadLocal.withInitial(() -> handle(backend.defaultStream(DefaultStreamMode.PER_THREAD),
				GpuStream.Kind.DEFAULT_PER_THREAD, StreamPriority.NORMAL, null, Thread.currentThread()));
	}

	private StreamHandle handle(NativeStream stream, GpuStream.Kind kind, StreamPriority priority,
			@Nullable LeaseState lease, @Nullable Thread owner) {
		return new StreamHandle(this.lifecycle, this.completions, this.events, stream, kind, priority, lease, owner);
	}

	/** The handle of a pooled stream, valid while {@code lease} is open. */
	public StreamHandle pooled(NativeStream stream, StreamPriority priority, LeaseState lease) {
		return handle(stream, GpuStream.Kind.POOLED, priority, Objects.requireNonNull(lease, "lease"), null);
	}

	public DefaultStreamMode mode() {
		return this.mode;
	}

	/**
	 * The default stream of the calling thread: its own in {@link DefaultStreamMode#PER_THREAD} mode
	 * (usable only from that thread), the shared legacy stream otherwise.
	 */
	public StreamHandle defaultStream() {
		this.lifecycle.ensureOpen();
		return (this.legacy != null) ? this.legacy : this.perThread.get();
	}

	// ---- the current stream --------------------------------------------------------------------

	/**
	 * The calling thread's current stream without dropping a stale scope: its scope's stream while
	 * that lease is open, else its default stream (created for the thread when it has none yet). For
	 * reports; launches use {@link #current()}.
	 */
	public StreamHandle currentQuietly() {
		StreamHandle stream = this.current.get();
		return (stream == null || stream.leaseClosed()) ? defaultStream() : stream;
	}

	/**
	 * The stream of the calling thread's scope while that lease is open, else {@code null}. Unlike
	 * {@link #currentQuietly()} it never creates the thread's default stream, so checks that care
	 * only about scopes (the pool's, on every acquire) leave threads without one as they are.
	 */
	public @Nullable StreamHandle scopedQuietly() {
		StreamHandle stream = this.current.get();
		return (stream == null || stream.leaseClosed()) ? null : stream;
	}

	/**
	 * The calling thread's current stream: its scope's, else its default stream.
	 * @throws GpuException when its scope outlived the lease of its stream (the scope is dropped)
	 */
	public StreamHandle current() {
		StreamHandle stream = this.current.get();
		if (stream == null) {
			return defaultStream();
		}
		if (stream.leaseClosed()) {
			// A scope outlived its lease (closed out of order, or reclaimed by the leak safety net). Drop
			// it, so that this thread (a pooled request thread, say) is not stuck with it, and say so.
			this.current.remove();
			throw new GpuException("The current stream " + stream.name() + " of " + HostThreads.describe(Thread.currentThread())
					+ " belongs to a lease that was closed while a StreamScope still made it current; the scope has "
					+ "been dropped, so later calls on this thread use the default stream. Close a StreamScope before "
					+ "its lease (declare the lease first in try-with-resources)");
		}
		return stream;
	}

	/** Makes {@code stream} the calling thread's current stream until the scope is closed. */
	public StreamScope useStream(GpuStream stream) {
		Objects.requireNonNull(stream, "stream");
		StreamHandle handle = StreamHandle.of(stream);
		handle.use();
		this.lifecycle.ensureSame(handle.lifecycle(), "Stream ", stream.name());
		StreamHandle previous = this.current.get();
		this.current.set(handle);
		return new ScopeHandle(this, previous);
	}

	/** Runs {@code action} with {@code stream} as the current stream. */
	public <T> T callWithStream(GpuStream stream, Supplier<T> action) {
		Objects.requireNonNull(action, "action");
		try (StreamScope scope = useStream(stream)) {
			return action.get();
		}
	}

	void restore(StreamHandle previous) {
		if (previous == null) {
			this.current.remove();
		}
		else {
			this.current.set(previous);
		}
	}

	// ---- stream-parallel groups ----------------------------------------------------------------

	/** Whether the calling thread runs a stream-parallel group now. */
	public boolean inGroup() {
		return this.inGroup.get() != null;
	}

	/** The calling thread starts a group; it holds {@code leases} pooled streams for it (0 while it leases them). */
	public void groupHolds(int leases) {
		this.inGroup.set(leases);
	}

	/** The calling thread's group is over. */
	public void groupEnded() {
		this.inGroup.remove();
	}

	/** The pooled streams the stream-parallel group the calling thread runs holds; 0 outside a group. */
	public int groupLeasesHeld() {
		Integer held = this.inGroup.get();
		return (held == null) ? 0 : held;
	}

}
