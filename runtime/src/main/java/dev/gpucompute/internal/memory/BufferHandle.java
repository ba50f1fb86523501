package dev.gpucompute.internal.memory;

import java.lang.ref.Cleaner;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.InvalidBufferRangeException;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/** The implementation of {@link DeviceBuffer}. */
public final class BufferHandle implements DeviceBuffer {

	private final DeviceBufferState state;

	private final Cleaner.Cleanable cleanable;

	BufferHandle(DeviceBufferState state) {
		this.state = state;
		this.cleanable = Leaks.CLEANER.register(this, state);
	}

	@Override
	public long byteSize() {
		return this.state.memory.byteSize();
	}

	@Override
	public GpuStream stream() {
		return this.state.owner;
	}

	@Override
	public boolean isClosed() {
		return this.state.isClosed();
	}

	/**
	 * The runtime's buffer behind {@code buffer}.
	 * @throws GpuException when it is not one of the runtime's buffers
	 */
	static BufferHandle of(DeviceBuffer buffer) {
		if (buffer instanceof BufferHandle handle) {
			return handle;
		}
		throw new GpuException("Device buffer " + buffer + " was not allocated by the gpu-compute runtime");
	}

	/** The calling thread's current stream of this buffer's context, for the copies that name none. */
	private GpuStream current() {
		return this.state.room.streams.current();
	}

	// ---- host → device ------------------------------------------------------------------------

	@Override
	public CompletableFuture<Void> upload(HostArray src) {
		return upload(src, 0, current());
	}

	@Override
	public CompletableFuture<Void> upload(HostArray src, GpuStream stream) {
		return upload(src, 0, stream);
	}

	@Override
	public CompletableFuture<Void> upload(HostArray src, long elementOffset, GpuStream stream) {
		Objects.requireNonNull(src, "src");
		long offset = byteOffset(src, elementOffset, "upload");
		return toDevice(offset, src.byteSize(), stream, CopyPipeline.source(src));
	}

	/** The byte offset of element {@code elementOffset} of {@code host}'s type, refused when it does not fit a long. */
	private long byteOffset(HostArray host, long elementOffset, String what) {
		ElementType type = host.type();
		if (elementOffset < 0 || elementOffset > Long.MAX_VALUE / type.bytes()) {
			throw new InvalidBufferRangeException("The " + what + " of " + host.length() + " "
					+ type.name().toLowerCase(Locale.ROOT) + "s at element " + elementOffset
					+ " does not fit a device buffer of " + byteSize() + " bytes");
		}
		return elementOffset * type.bytes();
	}

	@Override
	public CompletableFuture<Void> upload(HostBuffer src) {
		return upload(src, current());
	}

	@Override
	public CompletableFuture<Void> upload(HostBuffer src, GpuStream stream) {
		Objects.requireNonNull(src, "src");
		return upload(src, 0, 0, src.byteSize(), stream);
	}

	@Override
	public CompletableFuture<Void> upload(HostBuffer src, long srcOffset, long dstOffset, long bytes, GpuStream stream) {
		Objects.requireNonNull(src, "src");
		NativeStream target = checkCopy(dstOffset, bytes, stream, "upload");
		HostBufferHandle.State host = HostBufferHandle.of(src).stateFor(this.state.room.lifecycle);
		host.checkRange(srcOffset, bytes, "upload");
		Capture capture = captured(target, "Upload from a host buffer");
		if (bytes == 0) {
			return CompletableFuture.completedFuture(null);
		}
		if (capture != null) {
			return CapturedCopies.upload(capture, host, srcOffset, this, dstOffset, bytes, target);
		}
		return this.state.room.copies.upload(host, srcOffset, this, dstOffset, bytes, stream, target);
	}

	private CompletableFuture<Void> toDevice(long offset, long bytes, GpuStream stream, CopyPipeline.Source source) {
		NativeStream target = checkCopy(offset, bytes, stream, "upload");
		refuseStaged(target, "Upload from a Java array or ByteBuffer");
		if (bytes == 0) {
			return CompletableFuture.completedFuture(null);
		}
		return this.state.room.copies.upload(this, offset, bytes, stream, target, source);
	}

	// ---- device → host ------------------------------------------------------------------------

	@Override
	public CompletableFuture<Void> download(HostArray dst) {
		return download(dst, 0, current());
	}

	@Override
	public CompletableFuture<Void> download(HostArray dst, GpuStream stream) {
		return download(dst, 0, stream);
	}

	@Override
	public CompletableFuture<Void> download(HostArray dst, long elementOffset, GpuStream stream) {
		Objects.requireNonNull(dst, "dst");
		CopyPipeline.Sink sink = CopyPipeline.sink(dst, "download destination");
		long offset = byteOffset(dst, elementOffset, "download");
		return toHost(offset, dst.byteSize(), stream, sink);
	}

	@Override
	public CompletableFuture<Void> download(HostBuffer dst) {
		return download(dst, current());
	}

	@Override
	public CompletableFuture<Void> download(HostBuffer dst, GpuStream stream) {
		Objects.requireNonNull(dst, "dst");
		return download(dst, 0, 0, dst.byteSize(), stream);
	}

	@Override
	public CompletableFuture<Void> download(HostBuffer dst, long srcOffset, long dstOffset, long bytes,
			GpuStream stream) {
		Objects.requireNonNull(dst, "dst");
		NativeStream target = checkCopy(srcOffset, bytes, stream, "download");
		HostBufferHandle.State host = HostBufferHandle.of(dst).stateFor(this.state.room.lifecycle);
		host.checkRange(dstOffset, bytes, "download");
		Capture capture = captured(target, "Download into a host buffer");
		if (bytes == 0) {
			return CompletableFuture.completedFuture(null);
		}
		if (capture != null) {
			return CapturedCopies.download(capture, this, srcOffset, host, dstOffset, bytes, target);
		}
		return this.state.room.copies.download(this, srcOffset, host, dstOffset, bytes, stream, target);
	}

	private CompletableFuture<Void> toHost(long offset, long bytes, GpuStream stream, CopyPipeline.Sink sink) {
		NativeStream target = checkCopy(offset, bytes, stream, "download");
		refuseStaged(target, "Download into a Java array or ByteBuffer");
		if (bytes == 0) {
			return CompletableFuture.completedFuture(null);
		}
		return this.state.room.copies.download(this, offset, bytes, stream, target, sink);
	}

	// ---- device → device ----------------------------------------------------------------------

	@Override
	public void fill(byte value) {
		fill(value, current());
	}

	@Override
	public void copyFrom(DeviceBuffer src, long srcOffset, long dstOffset, long bytes) {
		copyFrom(src, srcOffset, dstOffset, bytes, current());
	}

	@Override
	public void fill(byte value, GpuStream stream) {
		NativeStream target = checkCopy(0, byteSize(), stream, "fill");
		usedOn(stream, target, "Fill");
		this.state.room.backend.fill(this.state.memory, 0, byteSize(), value, target);
	}

	@Override
	public void copyFrom(DeviceBuffer source, long srcOffset, long dstOffset, long bytes, GpuStream stream) {
		Objects.requireNonNull(source, "src");
		BufferHandle src = of(source);
		NativeStream target = checkCopy(dstOffset, bytes, stream, "copy");
		if (src.state.room != this.state.room) {
			copyFromPeer(src, srcOffset, dstOffset, bytes, stream, target);
			return;
		}
		NativeMemory from = src.memoryFor(this.state.room.lifecycle);
		checkRange(srcOffset, bytes, src.byteSize(), "copy source");
		if (src == this && bytes > 0 && srcOffset < dstOffset + bytes && dstOffset < srcOffset + bytes) {
			throw new InvalidBufferRangeException("The copy of " + bytes + " bytes from offset " + srcOffset + " to offset "
					+ dstOffset + " within one buffer overlaps itself, which devices do not copy reliably; copy through "
					+ "a second buffer");
		}
		usedOn(stream, target, "Copy between device buffers");
		src.usedOn(stream, target, "Copy between device buffers");
		this.state.room.backend.copyDeviceToDevice(from, srcOffset, this.state.memory, dstOffset, bytes,
				target);
	}

	private void copyFromPeer(BufferHandle src, long srcOffset, long dstOffset, long bytes, GpuStream stream,
			NativeStream target) {
		this.state.room.lifecycle.ensureSameOrPeer(src.state.room.lifecycle, "Device buffer");
		if (src.isClosed()) {
			throw new GpuException("Device buffer of " + src.byteSize() + " bytes used after it was closed");
		}
		checkRange(srcOffset, bytes, src.byteSize(), "copy source");
		Capture capture = captured(target, "Copy from another device's buffer");
		if (capture != null) {
			throw this.state.room.lifecycle.captures().outsideDependency(capture, "Copy from another device's buffer",
					"the work of another device (copy between devices before or after the capture)");
		}
		this.state.usedOn(stream);
		src.state.usedOn(stream);
		this.state.room.backend.copyFromPeer(src.state.room.backend, src.state.memory, srcOffset,
				this.state.memory, dstOffset, bytes, target);
	}

	// ---- interop ------------------------------------------------------------------------------

	@Override
	public <T> Optional<T> nativeHandle(Class<T> type) {
		return nativeHandle(type, current());
	}

	@Override
	public <T> Optional<T> nativeHandle(Class<T> type, GpuStream stream) {
		Objects.requireNonNull(type, "type");
		NativeStream target = checkCopy(0, 0, stream, "native use");
		usedOn(stream, target, "Native use of a device buffer");
		return Optional.ofNullable(this.state.memory.nativeHandle(type));
	}

	private NativeStream checkCopy(long offset, long bytes, GpuStream stream, String what) {
		Objects.requireNonNull(stream, "stream");
		StreamHandle handle = StreamHandle.of(stream);
		memoryFor(handle.lifecycle());
		NativeStream target = handle.use();
		checkRange(offset, bytes, byteSize(), what);
		return target;
	}

	private static void checkRange(long offset, long bytes, long size, String what) {
		if (offset < 0 || bytes < 0 || offset > size || bytes > size - offset) {
			throw new InvalidBufferRangeException("The " + what + " of " + bytes + " bytes at offset " + offset
					+ " does not fit a device buffer of " + size + " bytes");
		}
	}

	/**
	 * The capture {@code target} takes part in for the calling thread, or {@code null}; refuses work on
	 * a stream of another thread's capture, or outside the thread's own.
	 */
	private @Nullable Capture captured(NativeStream target, String operation) {
		Captures captures = this.state.room.lifecycle.captures();
		return captures.any() ? captures.forWork(target, operation) : null;
	}

	/** Refuses a copy staged on the host (from or into an array or {@code ByteBuffer}) in a capture. */
	private void refuseStaged(NativeStream target, String operation) {
		Capture capture = captured(target, operation);
		if (capture != null) {
			throw this.state.room.lifecycle.captures().stagedCopy(capture, operation);
		}
	}

	/**
	 * A use on {@code stream} before it is enqueued: ordered now, or, when a capture records it, at
	 * every replay on the replay's stream.
	 */
	private void usedOn(GpuStream stream, NativeStream target, String operation) {
		Capture capture = captured(target, operation);
		if (capture != null) {
			capture.uses(CapturedCopies.device(this.state));
		}
		else {
			this.state.usedOn(stream);
		}
	}

	DeviceBufferState state() {
		return this.state;
	}

	/** The backend memory without checks, for a launch whose arguments were just checked. */
	NativeMemory nativeMemory() {
		return this.state.memory;
	}

	/** The backend memory, after checking this buffer may be used with the context of {@code lifecycle}. */
	NativeMemory memoryFor(ContextState lifecycle) {
		lifecycle.ensureSame(this.state.room.lifecycle, "Device buffer", "");
		this.state.room.lifecycle.ensureOpen();
		if (this.state.isClosed()) {
			throw new GpuException("Device buffer of " + byteSize() + " bytes used after it was closed");
		}
		return this.state.memory;
	}

	/**
	 * Remembers a use on {@code stream} before it is enqueued: orders it after the allocation and
	 * makes the free wait for it. Cheap when it is the owner or a stream seen before.
	 */
	void usedOn(GpuStream stream) {
		this.state.usedOn(stream);
	}

	@Override
	public void close() {
		Captures captures = this.state.room.lifecycle.captures();
		if (captures.any() && !this.state.isClosed()) {
			this.state.checkFree(captures);
		}
		this.state.markExplicit();
		this.cleanable.clean();
	}

	@Override
	public String toString() {
		return "DeviceBuffer[" + byteSize() + " bytes on " + this.state.owner.name() + (isClosed() ? ", closed" : "")
				+ "]";
	}

}
