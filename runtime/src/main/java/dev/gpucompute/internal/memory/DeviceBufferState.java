package dev.gpucompute.internal.memory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuStream;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.core.Tracked;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * The state of a {@link dev.gpucompute.DeviceBuffer} that its free needs: the memory, the owning stream, the other
 * streams it was used on, whether it is closed and freed. Shared with the leak cleaner (it is the
 * cleaning action) and the context (which tracks open buffers and releases them at close), so it must
 * not refer to the buffer. Thread-safe.
 */
final class DeviceBufferState implements Runnable, Tracked {

	// Read by the buffer on every copy: plain final fields, as when this was the buffer's nested class.
	final Memory room;

	final NativeMemory memory;

	final StreamHandle owner;

	private final @Nullable Throwable site;

	private final AtomicBoolean closed = new AtomicBoolean();

	/** Whether the memory went back; separate from closed, since a close during shutdown leaves it to the context. */
	private final AtomicBoolean freed = new AtomicBoolean();

	private volatile boolean explicit;

	/** Streams other than the owner this buffer was used on; rare, so a small list. */
	private @Nullable List<StreamHandle> others;

	DeviceBufferState(Memory room, NativeMemory memory, StreamHandle owner, @Nullable Throwable site) {
		this.room = room;
		this.memory = memory;
		this.owner = owner;
		this.site = site;
	}

	/** Whether the buffer was closed, by its caller, the leak cleaner or the context's close. */
	boolean isClosed() {
		return this.closed.get();
	}

	/** The caller closed the buffer: the leak cleaner's run that follows reports no leak. */
	void markExplicit() {
		this.explicit = true;
	}

	/**
	 * Remembers a use on {@code stream}, a stream outside any capture, before that use is enqueued.
	 * The first use on a stream other than the owner makes that stream wait for the owner's work so
	 * far, which includes the stream-ordered allocation; the free later waits for every such stream.
	 * Refused while the owner takes part in a capture: the wait would make the stream join it.
	 */
	void usedOn(GpuStream used) {
		StreamHandle stream = StreamHandle.of(used);
		if (sameQueue(stream, this.owner)) {
			return;
		}
		NativeStream after = orderingStream(this.owner);
		List<StreamHandle> known;
		synchronized (this) {
			known = this.others;
			if (known == null) {
				known = new ArrayList<>(2);
				this.others = known;
			}
			for (StreamHandle other : known) {
				if (sameQueue(other, stream)) {
					return;
				}
			}
			Captures captures = this.room.lifecycle.captures();
			if (after != null && captures.any()) {
				Capture capture = captures.of(after);
				if (capture != null) {
					throw captures.ownerCaptured(capture, stream.raw(), after, this.memory.byteSize());
				}
			}
			known.add(stream);
		}
		try {
			if (after != null) {
				this.room.events.order(stream.raw(), after);
			}
			else {
				// The owner is a pooled stream destroyed since: rare enough to wait for the whole device.
				this.room.backend.synchronizeDevice();
			}
		}
		catch (RuntimeException | Error ex) {
			// Not ordered: the next use on this stream tries again.
			synchronized (this) {
				known.remove(stream);
			}
			throw ex;
		}
	}

	/**
	 * Refuses the free while a capture is involved: the calling thread captures, or a stream the free
	 * would be ordered on takes part in a capture (the free would be recorded, not run).
	 */
	void checkFree(Captures captures) {
		String operation = "Closing (freeing) a device buffer of " + this.memory.byteSize() + " bytes";
		captures.checkAllocation(this.owner.raw(), operation);
		List<StreamHandle> used;
		synchronized (this) {
			used = (this.others != null) ? List.copyOf(this.others) : List.of();
		}
		for (StreamHandle stream : used) {
			captures.checkAllocation(stream.raw(), operation);
		}
	}

	/**
	 * A stream this thread may enqueue on whose work so far includes {@code stream}'s: the stream
	 * itself when reachable from here; for another thread's per-thread default stream that this
	 * backend cannot reach from here (CUDA), the legacy default stream, which orders after the work
	 * of every per-thread default stream; {@code null} for a destroyed pooled stream.
	 */
	private @Nullable NativeStream orderingStream(StreamHandle stream) {
		if (stream.reachableFromHere()) {
			return stream.raw();
		}
		if (stream.kind() == GpuStream.Kind.DEFAULT_PER_THREAD) {
			return stream.events().backend().defaultStream(DefaultStreamMode.LEGACY);
		}
		return null;
	}

	private static boolean sameQueue(StreamHandle a, StreamHandle b) {
		return a.raw() == b.raw() && a.owner() == b.owner();
	}

	@Override
	public void run() {
		if (!this.closed.compareAndSet(false, true)) {
			return;
		}
		if (!this.explicit) {
			Leaks.report("Device buffer of " + this.memory.byteSize() + " bytes", this.site);
		}
		if (!this.room.lifecycle.isOpen() || !this.freed.compareAndSet(false, true)) {
			return;
		}
		this.room.untrack(this);
		free();
	}

	private void free() {
		DeviceBackend backend = this.room.backend;
		List<StreamHandle> used;
		synchronized (this) {
			used = (this.others != null) ? List.copyOf(this.others) : List.of();
		}
		NativeStream freeOn = orderingStream(this.owner);
		boolean destroyed = freeOn == null;
		for (StreamHandle stream : used) {
			destroyed |= orderingStream(stream) == null;
		}
		if (freeOn == null || destroyed) {
			// A pooled stream that used the buffer was destroyed since (evicted): wait for the devices.
			for (StreamHandle stream : used) {
				stream.events().backend().synchronizeDevice();
			}
			backend.synchronizeDevice();
			backend.free(this.memory, backend.defaultStream(DefaultStreamMode.LEGACY));
			return;
		}
		for (StreamHandle stream : used) {
			NativeStream after = orderingStream(stream);
			if (after != null && after != freeOn) { // not null: the destroyed case returned above
				// The marker comes from the stream's own device: a copy to another device used it there.
				stream.events().order(freeOn, after);
			}
		}
		backend.free(this.memory, freeOn);
	}

	@Override
	public GpuContext context() {
		return this.room.lifecycle.owner();
	}

	@Override
	public LeakTracker.Kind kind() {
		return LeakTracker.Kind.DEVICE_BUFFER;
	}

	@Override
	public boolean isOpen() {
		return !this.closed.get();
	}

	@Override
	public String describe() {
		return "Device buffer of " + this.memory.byteSize() + " bytes on " + this.owner.name();
	}

	@Override
	public @Nullable Throwable acquisitionSite() {
		return this.site;
	}

	/**
	 * Marks the buffer closed at context close; the backend releases the memory with the device
	 * (after the drain), since the streams it could be freed on are already destroyed.
	 */
	void markReleasedAtShutdown() {
		this.closed.set(true);
		this.freed.set(true);
	}

}
