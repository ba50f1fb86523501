package dev.gpucompute;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Device memory. Allocated on a stream (stream-ordered on CUDA), which becomes its owning stream;
 * copies and launches are ordered on the stream they are given. The first use on another stream
 * waits (with an event, host not blocked) for the owning stream's work so far, which includes the
 * allocation; every such stream is remembered, and {@link #close()} makes the owning stream wait
 * for them before the memory is freed on it, so neither a first use nor a free can overtake the
 * other side. Ordering between later uses on different streams is the caller's, as in CUDA.
 *
 * <p>Copies are asynchronous and return a {@link CompletableFuture}. Java arrays and
 * {@link java.nio.ByteBuffer}s are copied as a {@link HostArray} (a typed region of one:
 * {@code upload(HostArray.of(floats), stream)}). An upload takes a copy of the host data before it
 * returns, so the caller may reuse its array at once; a download writes the host array when the copy
 * has run, so read it only after the future completed. Such host data goes through staging memory
 * (page-locked on CUDA), large copies
 * in chunks so that packing on the host overlaps the transfer. A {@link HostBuffer} is copied
 * straight from or into its memory, with no extra pass: the fastest copy, which reads or writes the
 * host buffer when it runs (its future says when). A failed copy leaves the destination range with
 * unspecified contents.
 *
 * <p>Every copy has a form without a stream, which uses the calling thread's current stream of the
 * buffer's context ({@link GpuLauncher#currentStream()}): the stream of an open {@link StreamScope},
 * else the thread's default stream, as for launches. Array copies may start at an element offset of
 * the device buffer ({@code upload(src, elementOffset, stream)}), counted in elements of the host
 * array's type (bytes for a {@code byte[]} or {@code ByteBuffer}). A buffer may have 0
 * bytes; copies of 0 bytes complete at once, and launches accept it.
 *
 * <p>{@link #nativeHandle(Class, GpuStream)} hands the memory to another library (JCuda's
 * {@code CUdeviceptr} on CUDA).
 *
 * <p>The code that allocated the buffer owns it and closes it (try-with-resources). Thread-safe.
 * After its context closed, every use raises {@link ContextClosedException} and close is a no-op.
 */
public interface DeviceBuffer extends AutoCloseable {

	/** Size in bytes. */
	long byteSize();

	/** The stream it was allocated on and will be freed on. */
	GpuStream stream();

	/** Whether it was closed (or its context was). */
	boolean isClosed();

	/**
	 * Copies {@code src} to the start of this buffer on the current stream; like
	 * {@link #upload(HostArray, long, GpuStream)} at element 0, which says when it waits.
	 * @throws StagingExhaustedException when it waits for staging longer than the staging timeout
	 */
	CompletableFuture<Void> upload(HostArray src);

	/**
	 * Copies {@code src} to the start of this buffer on {@code stream}; like
	 * {@link #upload(HostArray, long, GpuStream)} at element 0, which says when it waits.
	 * @throws StagingExhaustedException when it waits for staging longer than the staging timeout
	 */
	CompletableFuture<Void> upload(HostArray src, GpuStream stream);

	/**
	 * Copies {@code src} into this buffer from element {@code elementOffset} on (in elements of
	 * {@code src}'s {@linkplain HostArray#type() type}: bytes for a {@code byte[]} or
	 * {@code ByteBuffer}), on {@code stream}. The data is copied before this returns (through staging
	 * memory, see the class comment): the array may be reused at once.
	 *
	 * <p>So the call may wait: for room in the context's staging budget, and, for a copy larger than
	 * the few chunk-sized staging blocks it holds ({@link GpuContextBuilder#copyChunkSize(long)}: up
	 * to 8, or two per packing thread), for the stream to pass its earlier chunks so that their blocks
	 * take later ones. Behind a long kernel on {@code stream} that is as long as the kernel runs, but
	 * at most the staging timeout ({@link GpuContextBuilder#stagingTimeout(java.time.Duration)}) for
	 * room and for each block; then it throws. A {@link HostBuffer} upload never waits.
	 * @throws StagingExhaustedException when it waits for staging longer than the staging timeout; the
	 * chunks it had enqueued still run (this buffer's range has unspecified contents)
	 * @throws InvalidBufferRangeException when the elements do not fit this buffer at that offset
	 * @throws NullPointerException when {@code src} or {@code stream} is null
	 */
	CompletableFuture<Void> upload(HostArray src, long elementOffset, GpuStream stream);

	/**
	 * Copies all of {@code src} to the start of this buffer on the current stream, straight from its
	 * memory, like {@link #upload(HostBuffer, GpuStream)}.
	 */
	CompletableFuture<Void> upload(HostBuffer src);

	/**
	 * Copies all of {@code src} to the start of this buffer on {@code stream}, straight from its memory
	 * (no staging copy; a DMA transfer on CUDA). The copy reads {@code src} when it runs: leave those
	 * bytes unchanged until the returned future completes (see {@link HostBuffer}).
	 */
	CompletableFuture<Void> upload(HostBuffer src, GpuStream stream);

	/**
	 * Copies {@code bytes} bytes of {@code src} from its byte {@code srcOffset} into this buffer at
	 * {@code dstOffset}, straight from its memory, like {@link #upload(HostBuffer, GpuStream)}.
	 * @throws InvalidBufferRangeException when the range does not fit either buffer
	 * @throws ContextMismatchException when {@code src} belongs to another context
	 */
	CompletableFuture<Void> upload(HostBuffer src, long srcOffset, long dstOffset, long bytes, GpuStream stream);

	/**
	 * Copies the start of this buffer into {@code dst} on the current stream; like
	 * {@link #download(HostArray, long, GpuStream)} from element 0, which says when it waits.
	 * @throws StagingExhaustedException when it waits for staging longer than the staging timeout
	 */
	CompletableFuture<Void> download(HostArray dst);

	/**
	 * Copies the start of this buffer into {@code dst} on {@code stream}; like
	 * {@link #download(HostArray, long, GpuStream)} from element 0, which says when it waits.
	 * @throws StagingExhaustedException when it waits for staging longer than the staging timeout
	 */
	CompletableFuture<Void> download(HostArray dst, GpuStream stream);

	/**
	 * Copies {@code dst.length()} elements of this buffer from element {@code elementOffset} (in
	 * elements of {@code dst}'s {@linkplain HostArray#type() type}: bytes for a {@code byte[]} or
	 * {@code ByteBuffer}) into {@code dst}, on {@code stream}. {@code dst} is written when the copy has
	 * run: read it only after the returned future completed.
	 *
	 * <p>Every chunk's copy is on {@code stream} when this returns, so that work enqueued there later
	 * (a kernel that overwrites this buffer, its free) runs after the download has read it. So the call
	 * may wait, although it returns a future: for room in the context's staging budget, and, for a
	 * download larger than the few chunk-sized staging blocks it holds
	 * ({@link GpuContextBuilder#copyChunkSize(long)}: up to 8, or two per packing thread), for its
	 * earlier chunks to arrive and be unpacked so that their blocks take later ones. Behind a long kernel on {@code stream} that
	 * is as long as the kernel runs, but at most the staging timeout
	 * ({@link GpuContextBuilder#stagingTimeout(java.time.Duration)}) for room and for each block; then
	 * it throws, and a {@code get} with a timeout on the future does not bound that wait. A
	 * {@link HostBuffer} download never waits: it is one copy straight into the host buffer.
	 * @throws StagingExhaustedException when it waits for staging longer than the staging timeout; the
	 * chunks it had enqueued still run on the stream, and {@code dst} has unspecified contents
	 * @throws InvalidBufferRangeException when the elements do not lie within this buffer
	 * @throws IllegalArgumentException when {@code dst} is a read-only {@code ByteBuffer}
	 * @throws NullPointerException when {@code dst} or {@code stream} is null
	 */
	CompletableFuture<Void> download(HostArray dst, long elementOffset, GpuStream stream);

	/**
	 * Copies the start of this buffer into all of {@code dst} on the current stream, straight into its
	 * memory, like {@link #download(HostBuffer, GpuStream)}.
	 */
	CompletableFuture<Void> download(HostBuffer dst);

	/**
	 * Copies the start of this buffer into all of {@code dst}, straight into its memory (no staging
	 * copy; a DMA transfer on CUDA). Read those bytes of {@code dst} only after the returned future
	 * completed (see {@link HostBuffer}).
	 */
	CompletableFuture<Void> download(HostBuffer dst, GpuStream stream);

	/**
	 * Copies {@code bytes} bytes of this buffer from {@code srcOffset} into {@code dst} from its byte
	 * {@code dstOffset} on, like {@link #download(HostBuffer, GpuStream)}.
	 * @throws InvalidBufferRangeException when the range does not fit either buffer
	 * @throws ContextMismatchException when {@code dst} belongs to another context
	 */
	CompletableFuture<Void> download(HostBuffer dst, long srcOffset, long dstOffset, long bytes,
			GpuStream stream);

	/** Sets every byte to {@code value} on the current stream (see the class comment). */
	void fill(byte value);

	/** {@link #copyFrom(DeviceBuffer, long, long, long, GpuStream)} on the current stream. */
	void copyFrom(DeviceBuffer src, long srcOffset, long dstOffset, long bytes);

	/** Sets every byte to {@code value} on {@code stream}. */
	void fill(byte value, GpuStream stream);

	/**
	 * Copies {@code bytes} bytes from {@code src} at {@code srcOffset} to this buffer at
	 * {@code dstOffset}, on {@code stream} (one of this buffer's context). {@code src} may be a buffer
	 * of another device of the same {@link GpuDevices}: the copy then waits (without blocking the host)
	 * for {@code src}'s owning stream's work so far, goes device to device (peer access where the
	 * hardware allows, staged through the host by the driver where not), and {@code src}'s free
	 * waits for it.
	 */
	void copyFrom(DeviceBuffer src, long srcOffset, long dstOffset, long bytes, GpuStream stream);

	/** {@link #nativeHandle(Class, GpuStream)} for work enqueued on the current stream. */
	<T> Optional<T> nativeHandle(Class<T> type);

	/**
	 * This buffer's memory as a handle of the backend's own API, for work that code outside the
	 * runtime enqueues on {@code stream} (JCuda calls, cuBLAS through JCublas, another CUDA library):
	 * <ul>
	 * <li>CUDA: {@code jcuda.driver.CUdeviceptr} (a new pointer object each call) and {@link Long} (the
	 * device address);
	 * <li>CPU backend: none, so always empty (its kernels reach the memory through {@link CpuKernel.Args}).
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
	<T> Optional<T> nativeHandle(Class<T> type, GpuStream stream);

	/**
	 * Frees the memory, stream-ordered after all its uses. Idempotent; a no-op once the context has
	 * closed (the context freed it).
	 */
	void close();


}
