package dev.gpucompute;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The host memory of one context's copies: the pool that staging chunks and {@link HostBuffer}s come
 * from, the host buffers alive, and the threads that pack and unpack chunks of large copies besides
 * the calling thread. Thread-safe.
 */
final class HostMemory {

	/** How long an idle copy thread lives: an idle context holds none. */
	private static final long IDLE_THREAD_SECONDS = 5;

	private final GpuContext context;

	private final StagingPool pool;

	private final long chunkBytes;

	private final int threads;

	/** {@code null} when copies use only the calling thread. */
	private final ThreadPoolExecutor workers;

	private final Set<HostBuffer.State> live = ConcurrentHashMap.newKeySet();

	private final AtomicLong hostBufferBytes = new AtomicLong();

	private final AtomicLong stagingBytes = new AtomicLong();

	/** Set by {@link #close} before it releases the live host buffers; read after a buffer joins them. */
	private volatile boolean closed;

	HostMemory(GpuContext context, StagingPool pool, long chunkBytes, int threads, String threadPrefix) {
		this.context = context;
		this.pool = pool;
		this.chunkBytes = chunkBytes;
		this.threads = threads;
		if (threads > 0) {
			AtomicInteger n = new AtomicInteger();
			this.workers = new ThreadPoolExecutor(threads, threads, IDLE_THREAD_SECONDS, TimeUnit.SECONDS,
					new LinkedBlockingQueue<>(), (runnable) -> {
						Thread thread = new Thread(runnable, threadPrefix + n.incrementAndGet());
						thread.setDaemon(true);
						return thread;
					});
			this.workers.allowCoreThreadTimeOut(true);
		}
		else {
			this.workers = null;
		}
	}

	/** Bytes per chunk of a pipelined copy; copies of at most this many bytes go in one step. */
	long chunkBytes() {
		return this.chunkBytes;
	}

	/** Threads that help a copy besides the calling thread. */
	int threads() {
		return this.threads;
	}

	/** Runs {@code task} on a copy thread; false when there is none to take it (none configured, or closed). */
	boolean execute(Runnable task) {
		if (this.workers == null) {
			return false;
		}
		try {
			this.workers.execute(task);
			return true;
		}
		catch (RejectedExecutionException ex) {
			return false;
		}
	}

	// ---- staging -----------------------------------------------------------------------------------

	ByteBuffer takeStaging(long bytes) {
		ByteBuffer block = this.pool.take(bytes);
		this.stagingBytes.addAndGet(block.capacity());
		return block;
	}

	void giveStaging(ByteBuffer block) {
		this.stagingBytes.addAndGet(-block.capacity());
		this.pool.give(block);
	}

	// ---- host buffers -------------------------------------------------------------------------------

	HostBuffer allocate(long bytes) {
		if (bytes < 0 || bytes > Integer.MAX_VALUE) {
			throw new InvalidBufferRangeException("A host buffer holds 0 to " + Integer.MAX_VALUE + " bytes, got " + bytes);
		}
		// A buffer of 0 bytes is as usable as a device buffer of 0 bytes: copies of nothing. It still holds
		// the smallest pooled block, so that it is tracked and closed like any other.
		ByteBuffer block = this.pool.take(Math.max(1, bytes));
		HostBuffer.State state = new HostBuffer.State(this.context, this, block, bytes,
				Leaks.site(this.context.recordsLeakSites(), "Host buffer"));
		this.hostBufferBytes.addAndGet(block.capacity());
		this.live.add(state);
		if (this.closed) {
			// The context closed meanwhile, and its close may not have seen this buffer.
			if (state.releaseAtShutdown()) {
				release(state);
			}
			this.context.ensureOpen();
		}
		return new HostBuffer(state);
	}

	/** A host buffer is closed and its copies have ended: its block goes back to the pool. */
	void release(HostBuffer.State state) {
		if (this.live.remove(state)) {
			this.hostBufferBytes.addAndGet(-state.block.capacity());
			this.pool.give(state.block);
		}
	}

	HostMemoryInfo info() {
		return new HostMemoryInfo(this.hostBufferBytes.get(), this.live.size(), this.stagingBytes.get(),
				this.pool.cachedBytes());
	}

	/**
	 * At context close, after the completions have run: lets the copy threads finish what they were
	 * given (unpacks whose futures must complete), then closes the pool and releases the host
	 * buffers still open. When {@code release} is false, abandoned work may still copy into their
	 * memory, which then goes with the process (see {@link StagingPool#close}).
	 */
	void close(boolean release) {
		this.closed = true;
		if (this.workers != null) {
			this.workers.shutdown();
			try {
				if (!this.workers.awaitTermination(5, TimeUnit.SECONDS)) {
					this.workers.shutdownNow();
				}
			}
			catch (InterruptedException ex) {
				this.workers.shutdownNow();
				Thread.currentThread().interrupt();
			}
		}
		this.pool.close(release);
		for (HostBuffer.State state : List.copyOf(this.live)) {
			if (state.releaseAtShutdown()) {
				release(state);
			}
		}
	}

}
