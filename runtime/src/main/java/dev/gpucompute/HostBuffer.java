package dev.gpucompute;

import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * Host memory that {@link DeviceBuffer} copies read and write directly, with no staging copy:
 * page-locked ("pinned") memory on CUDA, so that a copy is a DMA transfer at the bus's speed that
 * runs asynchronously on its stream; off-heap memory on the CPU backend. The counterpart of CuPy's
 * {@code cupyx.empty_pinned}, PyTorch's {@code pin_memory()} and cuda.core's pinned-memory
 * {@code Buffer}. Allocate it with {@link GpuLauncher#allocateHost(long)}, fill it once
 * with {@link #put(long, HostArray)} or through a view, and upload from it as often as needed
 * ({@link DeviceBuffer#upload(HostBuffer, GpuStream)}); or download into it and read the result with
 * {@link #get(long, HostArray)} or a view. Arrays and ordinary buffers ({@link HostArray}) go through
 * staging memory instead, which costs one more pass over the data on the host (docs/runtime.md,
 * "Which copy to use").
 *
 * <p><b>Ordering.</b> A copy reads (upload) or writes (download) this memory when it runs on its
 * stream, after the work enqueued there before it, not when it is enqueued. So after an upload from
 * it, leave the bytes it copies unchanged until the upload's future has completed; after a download
 * into it, read those bytes only once the download's future has completed. The checked methods
 * ({@code put}, {@code get}) enforce this: a write over bytes a pending copy uses, or a read of bytes a
 * pending download writes, throws a {@link GpuException} that names that copy. Views are not checked:
 * touching memory a pending copy uses through a view is the caller's fault and gives undefined
 * contents (never a crash). Several uploads from the same bytes may be pending at once, on any streams.
 *
 * <p><b>Ownership, and close with copies pending.</b> The code that allocated it owns it and closes
 * it (try-with-resources, or at shutdown for one held for the application's life). Closing while
 * copies that use it are pending is allowed and never blocks: the release is deferred, like CUDA's
 * stream-ordered frees. The memory stays with the closed buffer (not in the context's pool, so no
 * allocation can get it) until the last of those copies has ended, and then goes back to the pool
 * (like PyTorch's caching host allocator), so a pending copy never reads or writes memory that
 * someone else got. From {@link #close()} on, the buffer is unusable whether copies are pending or
 * not: every method except {@link #byteSize()}, {@link #isClosed()}, {@code toString} and
 * {@code close} throws a {@link GpuException} ({@code put}, {@code get}, every
 * {@code as...Buffer()} view, and copies from or into it). A view taken before close cannot be
 * revoked and must not be used any more: until the pending copies end it races them, and after that
 * it may see another buffer's bytes, or, once the context has released the memory, crash the JVM like
 * any freed native memory. A host buffer dropped without close is released by a cleaner, after its
 * copies in the same way, and logged. When the context closes, it releases its host buffers; they
 * then raise {@link ContextClosedException}.
 *
 * <p>The memory is pooled: its contents at allocation are unspecified (a block a closed host buffer
 * gave back is not cleared). It may be used only with device buffers of its own context. Byte order
 * of the typed methods and views is the platform's, as on the device. Thread-safe; concurrent puts
 * and gets into disjoint ranges need no coordination.
 */
public interface HostBuffer extends AutoCloseable {

	/** Size in bytes, as allocated. */
	long byteSize();

	/** Whether it was closed (or its context was). */
	boolean isClosed();

	/**
	 * A view of the whole buffer in native byte order, position 0 and limit {@link #byteSize()}; each
	 * call returns an independent view. Valid until {@link #close()}.
	 */
	ByteBuffer asByteBuffer();

	/** {@link #asByteBuffer()} as floats (element {@code i} at byte {@code 4 * i}). */
	FloatBuffer asFloatBuffer();

	/** {@link #asByteBuffer()} as ints. */
	IntBuffer asIntBuffer();

	/** {@link #asByteBuffer()} as longs. */
	LongBuffer asLongBuffer();

	/** {@link #asByteBuffer()} as doubles. */
	DoubleBuffer asDoubleBuffer();

	/**
	 * Writes the elements of {@code src} at byte {@code byteOffset} (arrays in the platform's byte order,
	 * as the typed views read them; a {@code ByteBuffer}'s bytes as they are), e.g.
	 * {@code put(0, HostArray.of(floats))} or {@code put(64, HostArray.of(floats, 16, 8))}. Checked
	 * against the pending copies (see "Ordering" above).
	 * @return this buffer
	 * @throws InvalidBufferRangeException when {@code src}'s bytes do not fit at that offset
	 * @throws GpuException when a pending copy uses those bytes, or this buffer is closed
	 */
	HostBuffer put(long byteOffset, HostArray src);

	/**
	 * Reads {@code dst.byteSize()} bytes from byte {@code byteOffset} into {@code dst}; it holds them
	 * when this returns. Checked against the pending downloads (see "Ordering" above).
	 * @return this buffer
	 * @throws InvalidBufferRangeException when those bytes do not lie within this buffer
	 * @throws IllegalArgumentException when {@code dst} is a read-only {@code ByteBuffer}
	 * @throws GpuException when a pending download writes those bytes, or this buffer is closed
	 */
	HostBuffer get(long byteOffset, HostArray dst);

	/**
	 * Closes the buffer at once, without waiting for its copies: from now on every method but
	 * {@link #byteSize()}, {@link #isClosed()}, {@code toString} and {@code close} throws. Copies still
	 * pending keep the memory out of the pool until they end; it goes back to the context's pool then
	 * (see "Ownership" above). Idempotent; a no-op once the context has closed (it released the memory).
	 */
	void close();


}
