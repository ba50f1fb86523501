package dev.gpucompute.internal.memory;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;

import dev.gpucompute.spi.DeviceBackend;

/**
 * Reuses host memory that copies go through: the staging chunks of array and buffer copies and the
 * memory of {@link dev.gpucompute.HostBuffer}s. It is page-locked on CUDA, where allocating it costs far more than
 * a copy, and zero-filled direct memory on the CPU backend; so blocks are kept by size class up to a
 * cap, and a request takes a block of its class. Classes are powers of two from 4 KiB to 1 MiB, then
 * eight per power of two (at most 12.5% over the request, which matters for page-locked memory).
 * Returns past the cap, and blocks too large for a class, go straight back to the backend.
 * Thread-safe.
 */
final class StagingPool {

	private static final long MIN_CLASS = 4096;

	private static final long POWER_OF_TWO_UP_TO = 1 << 20;

	private final DeviceBackend backend;

	private final long maxCachedBytes;

	private final AtomicLong cachedBytes = new AtomicLong();

	private final ConcurrentHashMap<Integer, ConcurrentLinkedDeque<ByteBuffer>> free = new ConcurrentHashMap<>();

	private volatile boolean closed;

	private volatile boolean leaveToProcess;

	StagingPool(DeviceBackend backend, long maxCachedBytes) {
		this.backend = backend;
		this.maxCachedBytes = maxCachedBytes;
	}

	/**
	 * The block size a request of {@code bytes} gets, or {@code bytes} itself where that class would
	 * not fit a {@link ByteBuffer}.
	 */
	static long classSize(long bytes) {
		long size = Math.max(MIN_CLASS, bytes);
		if (size <= POWER_OF_TWO_UP_TO) {
			return Long.highestOneBit(size - 1) << 1;
		}
		long step = Long.highestOneBit(size - 1) >> 3;
		long rounded = (size + step - 1) / step * step;
		return (rounded <= Integer.MAX_VALUE) ? rounded : size;
	}

	/** A block of at least {@code bytes} (its class size), position 0; give it back with {@link #give}. */
	ByteBuffer take(long bytes) {
		long size = classSize(bytes);
		ConcurrentLinkedDeque<ByteBuffer> queue = (size <= Integer.MAX_VALUE) ? this.free.get((int) size) : null;
		ByteBuffer buffer = (queue != null) ? queue.pollLast() : null;
		if (buffer != null) {
			this.cachedBytes.addAndGet(-buffer.capacity());
		}
		else {
			buffer = this.backend.allocateStaging(size);
		}
		return buffer.clear();
	}

	void give(ByteBuffer buffer) {
		int capacity = buffer.capacity();
		if (!this.closed && classSize(capacity) == capacity) {
			if (this.cachedBytes.addAndGet(capacity) <= this.maxCachedBytes) {
				ConcurrentLinkedDeque<ByteBuffer> queue = this.free.computeIfAbsent(capacity,
						(size) -> new ConcurrentLinkedDeque<>());
				queue.addLast(buffer);
				if (this.closed) {
					// Raced with close, which may already have emptied this queue: empty it again. Whoever
					// polls a block frees it, so each is freed once. Not remove(buffer): ByteBuffer.equals
					// compares contents, so it could take out another block of the same bytes (zeroed, or
					// the same data staged twice), leaving this one to be freed a second time by close and
					// the other never.
					drain(queue);
				}
				return;
			}
			this.cachedBytes.addAndGet(-capacity);
		}
		release(buffer);
	}

	private void release(ByteBuffer buffer) {
		if (this.leaveToProcess) {
			return; // work may still copy into it (see close)
		}
		this.backend.freeStaging(buffer);
	}

	/**
	 * Frees every cached buffer; later returns are freed at once. When {@code release} is false, work
	 * abandoned at close may still copy into any of them, cached ones included (an abandoned copy's
	 * completion gives its block back before the close, while the device may still run it), so
	 * nothing is freed: the memory goes with the process. On CUDA {@code cuMemFreeHost} would free it
	 * under that copy, or wait for a kernel that never ends.
	 */
	void close(boolean release) {
		this.leaveToProcess = !release;
		this.closed = true;
		for (ConcurrentLinkedDeque<ByteBuffer> queue : this.free.values()) {
			drain(queue);
		}
	}

	/** Takes every block out of {@code queue} and frees it: after close, by close and by returns that raced it. */
	private void drain(ConcurrentLinkedDeque<ByteBuffer> queue) {
		ByteBuffer buffer;
		while ((buffer = queue.pollFirst()) != null) {
			this.cachedBytes.addAndGet(-buffer.capacity());
			release(buffer);
		}
	}

	/** Bytes held for reuse. */
	long cachedBytes() {
		return this.cachedBytes.get();
	}

}
