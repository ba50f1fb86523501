package dev.gpucompute.internal.stream;

import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuEvent;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.spi.HostThreads;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The implementation of {@link GpuStream}: a backend stream with the checks of its kind (a pooled
 * stream only while its lease is open, a per-thread default stream only on its thread) and the
 * collaborators its operations use (its context's lifecycle, completions and events). Thread-safe.
 */
public final class StreamHandle implements GpuStream {

	private final ContextState lifecycle;

	private final ContextCompletions completions;

	private final Events events;

	private final NativeStream stream;

	private final GpuStream.Kind kind;

	private final StreamPriority priority;

	/**
	 * The lease of a pooled stream, whose closing ends this handle's validity. Its release part, not
	 * the lease itself: a stream left current by an unclosed scope must not keep the lease reachable,
	 * or the leak safety net could never return it.
	 */
	private final @Nullable LeaseState lease;

	/** The thread a per-thread default stream belongs to. */
	private final @Nullable Thread owner;

	StreamHandle(ContextState lifecycle, ContextCompletions completions, Events events, NativeStream stream,
			GpuStream.Kind kind, StreamPriority priority, @Nullable LeaseState lease, @Nullable Thread owner) {
		this.lifecycle = lifecycle;
		this.completions = completions;
		this.events = events;
		this.stream = stream;
		this.kind = kind;
		this.priority = priority;
		this.lease = lease;
		this.owner = owner;
	}

	/**
	 * The runtime's handle behind {@code stream}.
	 * @throws GpuException when it is not one of the runtime's streams (an implementation of the
	 * interface from elsewhere)
	 */
	public static StreamHandle of(GpuStream stream) {
		if (stream instanceof StreamHandle handle) {
			return handle;
		}
		throw new GpuException("Stream " + stream + " was not created by the gpu-compute runtime");
	}

	@Override
	public String name() {
		return this.stream.name();
	}

	@Override
	public GpuStream.Kind kind() {
		return this.kind;
	}

	@Override
	public StreamPriority priority() {
		return this.priority;
	}

	@Override
	public GpuContext context() {
		return this.lifecycle.owner();
	}

	/** The lifecycle of the context this stream belongs to. */
	public ContextState lifecycle() {
		return this.lifecycle;
	}

	@Override
	public void synchronize() {
		NativeStream stream = use();
		checkHostWait(stream, "synchronize()");
		stream.synchronize();
	}

	@Override
	public boolean isIdle() {
		NativeStream stream = use();
		checkHostWait(stream, "isIdle()");
		return stream.query();
	}

	/** Refuses a host-side wait on this stream while a capture is involved (its thread's, or this stream's). */
	private void checkHostWait(NativeStream stream, String operation) {
		Captures captures = this.lifecycle.captures();
		if (captures.any()) {
			captures.checkHostWait(stream, operation);
		}
	}

	@Override
	public GpuStream record(GpuEvent event) {
		Objects.requireNonNull(event, "event");
		event.record(this);
		return this;
	}

	@Override
	public GpuStream waitFor(GpuEvent event) {
		Objects.requireNonNull(event, "event");
		NativeStream target = use();
		EventHandle handle = EventHandle.of(event);
		NativeEvent marker = handle.useForWait(this.lifecycle);
		Captures captures = this.lifecycle.captures();
		if (captures.any() || handle.recordedIn() != null) {
			CaptureChecks.eventWait(captures, target, this.kind == GpuStream.Kind.POOLED, handle,
					"Stream " + name() + ".waitFor(event)");
		}
		if (handle.isRecorded()) {
			target.waitEvent(marker);
		}
		return this;
	}

	@Override
	public GpuStream waitFor(GpuStream other) {
		Objects.requireNonNull(other, "other");
		StreamHandle source = of(other);
		NativeStream target = use();
		NativeStream marked = source.use();
		this.lifecycle.ensureSameOrPeer(source.lifecycle, "Stream " + other.name());
		if (marked == target) {
			return this;
		}
		Captures captures = this.lifecycle.captures();
		if (captures.any()) {
			CaptureChecks.streamWait(captures, target, this.kind == GpuStream.Kind.POOLED, marked,
					"Stream " + name() + ".waitFor(" + other.name() + ")");
		}
		if (source.lifecycle != this.lifecycle) {
			CaptureChecks.peerStreamWait(source.lifecycle.captures(), marked,
					"Stream " + name() + ".waitFor(" + other.name() + ")");
		}
		// The marker is recorded on the other stream, so it comes from that stream's device.
		source.events.order(target, marked);
		return this;
	}

	@Override
	public CompletableFuture<Void> completion() {
		checkHostWait(use(), "completion()");
		this.lifecycle.beginWork();
		try {
			return this.completions.whenDone(use(), (CompletableFuture<Void> done, GpuException failure) -> {
				if (failure != null) {
					done.completeExceptionally(failure);
				}
				else {
					done.complete(null);
				}
			});
		}
		finally {
			this.lifecycle.endWork();
		}
	}

	@Override
	public <T> Optional<T> nativeHandle(Class<T> type) {
		Objects.requireNonNull(type, "type");
		return Optional.ofNullable(use().nativeHandle(type));
	}

	/** The backend stream, after checking this handle may be used by the calling thread. */
	public NativeStream use() {
		this.lifecycle.ensureOpen();
		if (this.lease != null && this.lease.isClosed()) {
			throw new GpuException("Stream " + name() + " was used after its lease was closed; a pooled stream "
					+ "belongs to its lease only while the lease is open");
		}
		if (this.owner != null && this.owner != Thread.currentThread()) {
			throw new GpuException("Stream " + name() + " is the per-thread default stream of "
					+ HostThreads.describe(this.owner) + " and cannot be used from "
					+ HostThreads.describe(Thread.currentThread()) + "; lease a pooled stream to share work across threads");
		}
		return this.stream;
	}

	/** The backend stream without checks (ordering work whose own checks passed). */
	public NativeStream raw() {
		return this.stream;
	}

	/**
	 * Whether work may still be enqueued on this stream from the calling thread, for freeing memory
	 * after its last use: not another thread's per-thread stream (where the backend ties it to its
	 * thread), not a pooled stream the pool destroyed.
	 */
	public boolean reachableFromHere() {
		if (this.owner != null && this.owner != Thread.currentThread() && !this.stream.usableFromAnyThread()) {
			return false;
		}
		return this.lease == null || !this.lease.streamDestroyed();
	}

	/** Whether this is a pooled stream whose lease was closed. */
	public boolean leaseClosed() {
		return this.lease != null && this.lease.isClosed();
	}

	/** The thread of a per-thread default stream, or null. */
	public @Nullable Thread owner() {
		return this.owner;
	}

	/** The events of this stream's context (for ordering other work after this stream's). */
	public Events events() {
		return this.events;
	}

	@Override
	public String toString() {
		return "GpuStream[" + name() + ", " + this.kind + "]";
	}

}
