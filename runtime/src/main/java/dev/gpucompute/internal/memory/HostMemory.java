package dev.gpucompute.internal.memory;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuContext.HostMemoryInfo;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.InvalidBufferRangeException;
import dev.gpucompute.StagingExhaustedException;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.internal.core.Leaks;

/**
 * The host memory of one context's copies: the pool that staging chunks and {@link HostBuffer}s come
 * from, the budget of staging that copies may hold at once, the host buffers alive, and the threads
 * that pack and unpack chunks of large copies besides the calling thread. Host buffers do not count
 * against the staging budget: they are the application's memory, held as long as it chooses, and
 * counting them would let one long-lived buffer starve every copy. Thread-safe.
 */
final class HostMemory {

	private static final Logger log = LoggerFactory.getLogger(HostMemory.class);


	/** How long an idle copy thread lives: an idle context holds none. */
	private static final long IDLE_THREAD_SECONDS = 5;

	private final ContextState lifecycle;

	/** Whether host buffers record where they were allocated (leak detection is on). */
	private final boolean recordSites;

	final StagingPool pool;

	private final long chunkBytes;

	private final int threads;

	/** {@code null} when copies use only the calling thread. */
	private final @Nullable ThreadPoolExecutor workers;

	private final Set<HostBufferHandle.State> live = ConcurrentHashMap.newKeySet();

	private final AtomicLong hostBufferBytes = new AtomicLong();

	/** Bytes of the staging blocks copies hold (their capacity), measured apart from the budget's reservations. */
	private final AtomicLong stagingBytes = new AtomicLong();

	/** The most {@link #stagingBytes} ever reached. */
	private final AtomicLong stagingPeak = new AtomicLong();

	private final StagingBudget budget;

	private final int chunksInFlight;

	/** Set by {@link #close} before it releases the live host buffers; read after a buffer joins them. */
	private volatile boolean closed;

	HostMemory(ContextState lifecycle, boolean recordSites, StagingPool pool, long chunkBytes, int threads, String threadPrefix,
			long stagingBudget, Duration stagingTimeout) {
		this.lifecycle = lifecycle;
		this.recordSites = recordSites;
		this.pool = pool;
		this.chunkBytes = chunkBytes;
		this.threads = threads;
		this.budget = new StagingBudget(stagingBudget, stagingTimeout);
		// Two per thread that packs or unpacks (the caller and the helpers): one being packed or
		// unpacked while one is on the bus; at least 8, so that the bus stays busy across the time a
		// completed chunk takes to come back for reuse.
		this.chunksInFlight = Math.max(8, 2 * (threads + 1));
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

	/** Most staging blocks one chunked copy holds at once. */
	int chunksInFlight() {
		return this.chunksInFlight;
	}

	/**
	 * One block for a copy of {@code bytes} in one step, waiting for room in the staging budget.
	 * @throws dev.gpucompute.StagingExhaustedException when there is none within the staging timeout
	 * @throws dev.gpucompute.ContextClosedException when the context closes meanwhile
	 */
	ByteBuffer takeStaging(long bytes) {
		long size = StagingPool.classSize(bytes);
		this.budget.acquire(size);
		return takeReserved(bytes, size);
	}

	/**
	 * How many blocks of {@code bytes} a chunked copy that wants {@code wanted} waits for at once:
	 * {@code wanted}, or as many as the whole budget holds when that is fewer (at least one).
	 */
	int firstBlocks(long bytes, int wanted) {
		return (int) Math.max(1, Math.min(wanted, this.budget.limit() / StagingPool.classSize(bytes)));
	}

	/**
	 * Blocks of {@code bytes} for the chunks of one copy: waits for {@link #firstBlocks} of them at
	 * once (so that a copy never waits while it holds staging), then takes more, up to {@code most}
	 * in all, while the budget has room and no other copy waits.
	 * @throws dev.gpucompute.StagingExhaustedException when the first do not fit within the staging timeout
	 * @throws dev.gpucompute.ContextClosedException when the context closes meanwhile
	 */
	ByteBuffer[] takeStaging(long bytes, int first, int most) {
		long size = StagingPool.classSize(bytes);
		int count = firstBlocks(bytes, first);
		this.budget.acquire(count * size);
		while (count < most && this.budget.tryAcquire(size)) {
			count++;
		}
		ByteBuffer[] blocks = new ByteBuffer[count];
		int taken = 0;
		try {
			for (; taken < count; taken++) {
				blocks[taken] = takeReserved(bytes, size);
			}
		}
		catch (RuntimeException | Error ex) {
			for (int i = 0; i < taken; i++) {
				giveStaging(blocks[i]);
			}
			this.budget.release((count - taken - 1) * size); // the failed one released its own
			throw ex;
		}
		return blocks;
	}

	/** Takes a block whose {@code size} the budget has reserved; releases the reservation if it cannot. */
	private ByteBuffer takeReserved(long bytes, long size) {
		ByteBuffer block;
		try {
			block = this.pool.take(bytes);
		}
		catch (RuntimeException | Error ex) {
			this.budget.release(size);
			throw ex;
		}
		long held = this.stagingBytes.addAndGet(block.capacity());
		this.stagingPeak.accumulateAndGet(held, Math::max);
		return block;
	}

	/** A copy is done with {@code block}: back to the pool, and its room back to the budget. */
	void giveStaging(ByteBuffer block) {
		int capacity = block.capacity();
		this.stagingBytes.addAndGet(-capacity);
		this.pool.give(block);
		this.budget.release(capacity);
	}

	/**
	 * A copy gives up on {@code block}, which work on a stream that nobody will see end may still
	 * use: it never goes back to the pool, so nobody else gets memory under that work. Its room in
	 * the budget does come back: a budget that shrank for good with each such failure would leave
	 * later copies waiting for memory that no copy holds.
	 */
	void loseStaging(ByteBuffer block) {
		int capacity = block.capacity();
		this.stagingBytes.addAndGet(-capacity);
		this.budget.release(capacity);
	}

	/**
	 * The longest a chunked copy waits for one of its own blocks to come back from its stream (the
	 * staging timeout): past it the copy stops with {@link #ownBlocksLate}.
	 */
	long ownBlockTimeoutNanos() {
		return this.budget.timeoutNanos();
	}

	/**
	 * Counts a chunked copy that gave up waiting for its own blocks and describes it: {@code enqueued}
	 * of its {@code chunks} chunks of {@code chunkBytes} were on {@code stream}, holding all
	 * {@code blocks} of its blocks, and the stream had passed none of them within the staging timeout.
	 */
	StagingExhaustedException ownBlocksLate(String copy, long chunkBytes, int blocks, int enqueued, int chunks,
			String stream) {
		this.budget.ownBlockTimedOut();
		long millis = TimeUnit.NANOSECONDS.toMillis(this.budget.timeoutNanos());
		return new StagingExhaustedException("Staging memory exhausted: " + copy + " of " + chunks + " chunks of "
				+ chunkBytes + " bytes waited " + millis + " ms for one of its " + blocks
				+ " staging blocks to come back, and none did: stream " + stream + " had not passed the " + enqueued
				+ " chunks it had enqueued, held by earlier work on that stream. A copy larger than its staging blocks "
				+ "waits for its stream as it goes, at most gpu.copies.staging-timeout for each block; the chunks "
				+ "enqueued end on the stream and the rest were not enqueued. Raise gpu.copies.staging-timeout, copy "
				+ "after that work, or copy large data through a HostBuffer (no staging, never waits).",
				chunkBytes, this.budget.limit());
	}

	/** Whether a copy waits for staging: copies then give blocks back as their chunks complete. */
	boolean stagingContended() {
		return this.budget.contended();
	}

	/** The context is closing: copies waiting for staging, and later ones, fail with {@code reason}. */
	void stopStaging(String reason) {
		this.budget.close(reason);
	}

	// ---- host buffers -------------------------------------------------------------------------------

	HostBuffer allocate(long bytes) {
		if (bytes < 0 || bytes > Integer.MAX_VALUE) {
			throw new InvalidBufferRangeException("A host buffer holds 0 to " + Integer.MAX_VALUE + " bytes, got " + bytes);
		}
		// A buffer of 0 bytes is as usable as a device buffer of 0 bytes: copies of nothing. It still holds
		// the smallest pooled block, so that it is tracked and closed like any other.
		ByteBuffer block = this.pool.take(Math.max(1, bytes));
		HostBufferHandle.State state = new HostBufferHandle.State(this.lifecycle, this, block, bytes,
				Leaks.site(this.recordSites || LeakRegistry.active(), "Host buffer"));
		this.hostBufferBytes.addAndGet(block.capacity());
		this.live.add(state);
		if (this.closed) {
			// The context closed meanwhile, and its close may not have seen this buffer.
			if (state.releaseAtShutdown()) {
				release(state);
			}
			this.lifecycle.ensureOpen();
		}
		return new HostBufferHandle(state);
	}

	/** A host buffer is closed and its copies have ended: its block goes back to the pool. */
	void release(HostBufferHandle.State state) {
		if (this.live.remove(state)) {
			this.hostBufferBytes.addAndGet(-state.block.capacity());
			this.pool.give(state.block);
		}
	}

	HostMemoryInfo info() {
		return new HostMemoryInfo(this.hostBufferBytes.get(), this.live.size(), this.stagingBytes.get(),
				this.pool.cachedBytes(), this.budget.limit(), this.stagingPeak.get(), this.budget.waiting(),
				this.budget.timeouts());
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
			List<Runnable> dropped = List.of();
			try {
				if (!this.workers.awaitTermination(5, TimeUnit.SECONDS)) {
					dropped = this.workers.shutdownNow();
				}
			}
			catch (InterruptedException ex) {
				dropped = this.workers.shutdownNow();
				Thread.currentThread().interrupt();
			}
			// Tasks the busy copy threads never started (a download's chunks to unpack, an upload's to
			// pack) run here, before the staging they use is freed: each ends its chunk, so no copy's
			// future is left waiting for a task that would never run.
			for (Runnable task : dropped) {
				try {
					task.run();
				}
				catch (RuntimeException | Error ex) {
					log.warn("A copy task left over at close failed", ex);
				}
			}
		}
		this.pool.close(release);
		for (HostBufferHandle.State state : List.copyOf(this.live)) {
			if (state.releaseAtShutdown()) {
				release(state);
			}
		}
	}

}
