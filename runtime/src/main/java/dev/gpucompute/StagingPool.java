package dev.gpucompute;

import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;

import dev.gpucompute.spi.DeviceBackend;

/**
 * Reuses the host staging memory of copies. Staging memory is page-locked on CUDA, where
 * allocating it costs far more than the copy itself, and zero-filled direct memory on the CPU
 * backend; so buffers are kept in power-of-two size classes (4 KiB to 1 GiB) up to a cap, and a copy
 * takes one of at least its size. Larger requests, and returns past the cap, go straight to the
 * backend. Thread-safe.
 */
final class StagingPool {

	private static final int MIN_SHIFT = 12;

	private static final int MAX_SHIFT = 30;

	private final DeviceBackend backend;

	private final long maxCachedBytes;

	private final AtomicLong cachedBytes = new AtomicLong();

	@SuppressWarnings("unchecked")
	private final ConcurrentLinkedDeque<ByteBuffer>[] free = new ConcurrentLinkedDeque[MAX_SHIFT - MIN_SHIFT + 1];

	private volatile boolean closed;

	private volatile boolean leaveToProcess;

	StagingPool(DeviceBackend backend, long maxCachedBytes) {
		this.backend = backend;
		this.maxCachedBytes = maxCachedBytes;
		for (int i = 0; i < this.free.length; i++) {
			this.free[i] = new ConcurrentLinkedDeque<>();
		}
	}

	/** A staging buffer of at least {@code bytes}, position 0; give it back with {@link #give}. */
	ByteBuffer take(long bytes) {
		int shift = Math.max(MIN_SHIFT, 64 - Long.numberOfLeadingZeros(Math.max(1, bytes) - 1));
		if (shift > MAX_SHIFT) {
			return this.backend.allocateStaging(bytes);
		}
		ByteBuffer buffer = this.free[shift - MIN_SHIFT].pollLast();
		if (buffer != null) {
			this.cachedBytes.addAndGet(-buffer.capacity());
			return buffer.clear();
		}
		return this.backend.allocateStaging(1L << shift);
	}

	void give(ByteBuffer buffer) {
		int capacity = buffer.capacity();
		if (!this.closed && Integer.bitCount(capacity) == 1 && capacity >= (1 << MIN_SHIFT)) {
			if (this.cachedBytes.addAndGet(capacity) <= this.maxCachedBytes) {
				ConcurrentLinkedDeque<ByteBuffer> queue = this.free[Integer.numberOfTrailingZeros(capacity) - MIN_SHIFT];
				queue.addLast(buffer);
				if (this.closed && queue.remove(buffer)) {
					// Raced with close, which may already have emptied this queue.
					this.cachedBytes.addAndGet(-capacity);
					release(buffer);
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
	 * abandoned at close may still copy into buffers given back later, so nothing more is freed: the
	 * memory goes with the process.
	 */
	void close(boolean release) {
		this.leaveToProcess = !release;
		this.closed = true;
		for (ConcurrentLinkedDeque<ByteBuffer> queue : this.free) {
			ByteBuffer buffer;
			while ((buffer = queue.pollFirst()) != null) {
				this.backend.freeStaging(buffer);
			}
		}
		this.cachedBytes.set(0);
	}

	/** Bytes held for reuse (for tests and diagnostics). */
	long cachedBytes() {
		return this.cachedBytes.get();
	}

}
