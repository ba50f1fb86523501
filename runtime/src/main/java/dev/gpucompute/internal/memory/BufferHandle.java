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
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.spi.NativeMemory;
import dev.gpucompute.spi.NativeStream;

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

	/**
	 * Copies all of {@code src} to the start of this buffer on the current stream, straight from its
	 * memory, like {@link #upload(HostBuffer, GpuStream)}.
	 */
	@Override
	public CompletableFuture<Void> upload(HostBuffer src) {
		return upload(src, current());
	}

	/**
	 * Copies all of {@code src} to the start of this buffer on {@code stream}, straight from its memory
	 * (no staging copy; a DMA transfer on CUDA). The copy reads {@code src} when it runs: leave those
	 * bytes unchanged until the returned future completes (see {@link HostBuffer}).
	 */
	@Override
	public CompletableFuture<Void> upload(HostBuffer src, GpuStream stream) {
		Objects.requireNonNull(src, "src");
		return upload(src, 0, 0, src.byteSize(), stream);
	}

	/**
	 * Copies {@code bytes} bytes of {@code src} from its byte {@code srcOffset} into this buffer at
	 * {@code dstOffset}, straight from its memory, like {@link #upload(HostBuffer, GpuStream)}.
	 * @throws InvalidBufferRangeException when the range does not fit either buffer
	 * @throws dev.gpucompute.ContextMismatchException when {@code src} belongs to another context
	 */
	@Override
	public CompletableFuture<Void> upload(HostBuffer src, long srcOffset, long dstOffset, long bytes, GpuStream stream) {
		Objects.requireNonNull(src, "src");
		NativeStream target = checkCopy(dstOffset, bytes, stream, "upload");
		HostBufferHandle.State host = HostBufferHandle.of(src).stateFor(this.state.room.lifecycle);
		host.checkRange(srcOffset, bytes, "upload");
		if (bytes == 0) {
			return CompletableFuture.completedFuture(null);
		}
		return this.state.room.copies.upload(host, srcOffset, this, dstOffset, bytes, stream, target);
	}

	private CompletableFuture<Void> toDevice(long offset, long bytes, GpuStream stream, CopyPipeline.Source source) {
		NativeStream target = checkCopy(offset, bytes, stream, "upload");
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

	/**
	 * Copies the start of this buffer into all of {@code dst} on the current stream, straight into its
	 * memory, like {@link #download(HostBuffer, GpuStream)}.
	 */
	@Override
	public CompletableFuture<Void> download(HostBuffer dst) {
		return download(dst, current());
	}

	/**
	 * Copies the start of this buffer into all of {@code dst}, straight into its memory (no staging
	 * copy; a DMA transfer on CUDA). Read those bytes of {@code dst} only after the returned future
	 * completed (see {@link HostBuffer}).
	 */
	@Override
	public CompletableFuture<Void> download(HostBuffer dst, GpuStream stream) {
		Objects.requireNonNull(dst, "dst");
		return download(dst, 0, 0, dst.byteSize(), stream);
	}

	/**
	 * Copies {@code bytes} bytes of this buffer from {@code srcOffset} into {@code dst} from its byte
	 * {@code dstOffset} on, like {@link #download(HostBuffer, GpuStream)}.
	 * @throws InvalidBufferRangeException when the range does not fit either buffer
	 * @throws dev.gpucompute.ContextMismatchException when {@code dst} belongs to another context
	 */
	@Override
	public CompletableFuture<Void> download(HostBuffer dst, long srcOffset, long dstOffset, long bytes,
			GpuStream stream) {
		Objects.requireNonNull(dst, "dst");
		NativeStream target = checkCopy(srcOffset, bytes, stream, "download");
		HostBufferHandle.State host = HostBufferHandle.of(dst).stateFor(this.state.room.lifecycle);
		host.checkRange(dstOffset, bytes, "download");
		if (bytes == 0) {
			return CompletableFuture.completedFuture(null);
		}
		return this.state.room.copies.download(this, srcOffset, host, dstOffset, bytes, stream, target);
	}

	private CompletableFuture<Void> toHost(long offset, long bytes, GpuStream stream, CopyPipeline.Sink sink) {
		NativeStream target = checkCopy(offset, bytes, stream, "download");
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
		this.state.usedOn(stream);
		this.state.room.backend.fill(this.state.memory, 0, byteSize(), value, target);
	}

	/**
	 * Copies {@code bytes} bytes from {@code src} at {@code srcOffset} to this buffer at
	 * {@code dstOffset}, on {@code stream} (one of this buffer's context). {@code src} may be a buffer
	 * of another device of the same {@link dev.gpucompute.GpuDevices}: the copy then waits (without blocking the host)
	 * for {@code src}'s owning stream's work so far, goes device to device (peer access where the
	 * hardware allows, staged through the host by the driver where not), and {@code src}'s free
	 * waits for it.
	 */
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
		this.state.usedOn(stream);
		src.state.usedOn(stream);
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

	/**
	 * This buffer's memory as a handle of the backend's own API, for work that code outside the
	 * runtime enqueues on {@code stream} (JCuda calls, cuBLAS through JCublas, another CUDA library):
	 * <ul>
	 * <li>CUDA: {@code jcuda.driver.CUdeviceptr} (a new pointer object each call) and {@link Long} (the
	 * device address);
	 * <li>CPU backend: none, so always empty (its kernels reach the memory through {@link dev.gpucompute.KernelArgs}).
	 * </ul>
	 * The use is ordered like the runtime's own: the first use on a stream other than the owning one
	 * waits (on the device) for the owning stream's work so far, which includes the allocation, and
	 * {@link #close()} frees the memory only after the work enqueued on {@code stream} so far. So ask
	 * for the handle with the stream you will enqueue on, just before enqueueing there. Asking also makes
	 * the device's context current on the calling thread (CUDA), for the driver calls that follow.
	 *
	 * <p>The runtime still owns the memory: never free it through the handle. The handle is valid until
	 * this buffer is closed (or its context closes); work enqueued after that, or on a stream other than
	 * one the handle was asked for, is the caller's fault and may read or write memory reused by
	 * another buffer.
	 * @return the handle, or empty when the backend has none of that type
	 * @throws GpuException when the buffer or its context is closed, or {@code stream} cannot be used
	 */
	@Override
	public <T> Optional<T> nativeHandle(Class<T> type, GpuStream stream) {
		Objects.requireNonNull(type, "type");
		checkCopy(0, 0, stream, "native use");
		this.state.usedOn(stream);
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

	/**
	 * Frees the memory, stream-ordered after all its uses. Idempotent; a no-op once the context has
	 * closed (the context freed it).
	 */
	@Override
	public void close() {
		this.state.markExplicit();
		this.cleanable.clean();
	}

	@Override
	public String toString() {
		return "DeviceBuffer[" + byteSize() + " bytes on " + this.state.owner.name() + (isClosed() ? ", closed" : "")
				+ "]";
	}

}
