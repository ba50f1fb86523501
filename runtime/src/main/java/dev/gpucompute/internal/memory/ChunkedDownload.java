package dev.gpucompute.internal.memory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * A download in chunks through staging memory ({@link CopyPipeline}). Every chunk's copy is
 * enqueued before {@link #start} returns, since later work on the stream may overwrite the source;
 * each chunk is unpacked into the destination when it has arrived (on a copy thread where there is
 * one), while later chunks are still on the bus. The blocks come from the download's
 * {@link StagingWindow}: when it holds fewer blocks than the download has chunks, a block comes back
 * for a later chunk once its chunk is unpacked, and the calling thread waits for it before it
 * enqueues that chunk, at most the staging timeout for each block (then it stops with a
 * {@link dev.gpucompute.StagingExhaustedException}). The future completes after the last chunk's
 * staging is back. State is guarded by this object's monitor.
 *
 * <p>Why the caller waits rather than leaving the later chunks to the completions of earlier ones:
 * work the caller enqueues on the stream after this returns (a kernel that overwrites the source, the
 * source's stream-ordered free) would run before chunks enqueued later, so they would read what that
 * work left, breaking submission order on the stream; and a per-thread default stream can only be
 * reached from its own thread.
 */
final class ChunkedDownload {

	private final CopyPipeline copies;

	private final HostMemory host;

	private final long chunk;

	private final long bytes;

	private final int count;

	/** The block of each chunk from its enqueueing until it is unpacked. */
	private final ByteBuffer[] staging;

	private final CompletableFuture<Void> done = new CompletableFuture<>();

	private final CopyPipeline.Sink sink;

	@SuppressWarnings("NullAway.Init") // set by start(), before any chunk runs; nothing reads it before
	private StagingWindow window;

	/** Chunks given a block so far. */
	private int assigned;

	/** Chunks not yet unpacked, failed or given up on. */
	private int remaining;

	private volatile @Nullable GpuException failure;

	ChunkedDownload(CopyPipeline copies, long bytes, CopyPipeline.Sink sink) {
		this.copies = copies;
		this.host = copies.host();
		this.chunk = this.host.chunkBytes();
		this.bytes = bytes;
		this.count = (int) ((bytes + this.chunk - 1) / this.chunk);
		this.staging = new ByteBuffer[this.count];
		this.sink = sink;
		this.remaining = this.count;
	}

	/**
	 * Takes the staging, enqueues every chunk's copy on {@code stream} with a completion each (waiting
	 * for blocks to come back where the window holds fewer than all), and returns the future of the
	 * whole download. Throws when the staging cannot be had ({@link dev.gpucompute.StagingExhaustedException},
	 * holding nothing), when no block comes back within the staging timeout (the same exception) or
	 * when a copy cannot be enqueued; the chunks enqueued before end through their completions. When
	 * a chunk fails meanwhile, enqueueing stops and the future fails.
	 */
	CompletableFuture<Void> start(BufferHandle src, long offset, GpuStream stream, NativeStream target) {
		StagingWindow blocks = new StagingWindow(this.host, this.chunk, this.count);
		synchronized (this) {
			this.window = blocks;
		}
		int enqueued = 0;
		try {
			src.usedOn(stream);
			for (; enqueued < this.count; enqueued++) {
				if (!nextBlock(enqueued, stream)) {
					break;
				}
				this.copies.fault(CopyFaults.Step.COPY, enqueued);
				this.copies.backend().copyToHost(src.nativeMemory(), offset + enqueued * this.chunk, this.staging[enqueued],
						length(enqueued), target);
				int index = enqueued;
				try {
					this.copies.completions().whenDone(target, (failure) -> arrived(index, failure));
				}
				catch (RuntimeException ex) {
					// The chunk is on the stream with nobody to see it end: its block stays out of the pool.
					lose(enqueued++);
					throw ex;
				}
			}
		}
		catch (RuntimeException ex) {
			abandon(enqueued, ex);
			throw ex;
		}
		if (enqueued < this.count) {
			giveUp(enqueued);
		}
		return this.done;
	}

	private long length(int index) {
		return Math.min(this.chunk, this.bytes - index * this.chunk);
	}

	/**
	 * Gives chunk {@code index} a block, waiting for one to come back from an earlier chunk where
	 * none is spare; false when the download failed meanwhile (it stops enqueueing).
	 * @throws dev.gpucompute.StagingExhaustedException when none comes back within the staging timeout
	 */
	private synchronized boolean nextBlock(int index, GpuStream stream) {
		boolean interrupted = false;
		boolean announced = false;
		long remaining = this.host.ownBlockTimeoutNanos();
		try {
			for (;;) {
				if (this.failure != null) {
					return false;
				}
				ByteBuffer block = this.window.poll();
				if (block != null) {
					this.staging[index] = block;
					this.assigned++;
					return true;
				}
				if (remaining <= 0) {
					// The stream has not passed an earlier chunk all this time (a long kernel before the
					// download): the caller gets an error rather than an unbounded wait.
					throw this.host.ownBlocksLate("a download", this.chunk, this.window.held(), index, this.count,
							stream.name());
				}
				if (!announced) {
					// Waiting for the stream: a backend that polls for completions polls closely meanwhile.
					this.copies.backend().completionWaitStarted();
					announced = true;
				}
				try {
					long start = System.nanoTime();
					TimeUnit.NANOSECONDS.timedWait(this, remaining);
					remaining -= System.nanoTime() - start;
				}
				catch (InterruptedException ex) {
					// The chunks on the stream come back (or are abandoned at close); the flag is restored.
					interrupted = true;
				}
			}
		}
		finally {
			if (announced) {
				this.copies.backend().completionWaitEnded();
			}
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** Chunk {@code index}'s copy is done (or failed, or was abandoned at close). */
	private void arrived(int index, GpuException outcome) {
		if (outcome != null) {
			fail(outcome);
		}
		if (this.failure == null && this.host.execute(() -> unpack(index))) {
			return;
		}
		unpack(index);
	}

	private void unpack(int index) {
		try {
			if (this.failure == null) {
				this.copies.fault(CopyFaults.Step.UNPACK, index);
				this.sink.unpack(index * this.chunk, CopyPipeline.packed(this.staging[index], length(index)));
			}
		}
		catch (RuntimeException | Error ex) {
			fail(new GpuException("Copying chunk " + index + " of a download of " + this.bytes
					+ " bytes into host memory failed", ex));
		}
		finally {
			finish(index);
		}
	}

	/** Records the download's failure and wakes the calling thread, which stops enqueueing. */
	private synchronized void fail(GpuException outcome) {
		if (this.failure == null) {
			this.failure = outcome;
		}
		else if (this.failure != outcome && !(outcome instanceof ContextClosedException)) {
			this.failure.addSuppressed(outcome);
		}
		notifyAll();
	}

	/**
	 * Chunk {@code index} is unpacked (or failed): its block goes to a later chunk or back. The chunk
	 * counts as ended only once its block is back, so that the chunk ending last, on another thread,
	 * completes the future after every block is back (a caller that sees the future done sees no
	 * staging held by this download).
	 */
	private void finish(int index) {
		ByteBuffer giveBack = null;
		ByteBuffer[] rest = null;
		synchronized (this) {
			ByteBuffer block = this.staging[index];
			this.staging[index] = null;
			if (block != null) {
				boolean needed = this.failure == null && this.count - this.assigned > this.window.spare();
				giveBack = this.window.recycle(block, needed);
				notifyAll();
			}
		}
		this.window.giveBack(giveBack);
		synchronized (this) {
			if (--this.remaining == 0) {
				rest = this.window.drainSpare();
			}
		}
		if (rest != null) {
			this.window.giveBack(rest);
			CopyPipeline.complete(this.done, this.failure);
		}
	}

	/** The chunk at {@code index} is on the stream but nobody will see it end: its block is lost. */
	private void lose(int index) {
		List<ByteBuffer> lost = new ArrayList<>(1);
		synchronized (this) {
			this.window.takeBack(this.staging, index, index + 1, lost);
			this.remaining--;
		}
		for (ByteBuffer block : lost) {
			this.host.loseStaging(block);
		}
	}

	/** Enqueueing failed at chunk {@code enqueued}: the chunks before it end through {@link #arrived}. */
	private void abandon(int enqueued, RuntimeException cause) {
		fail((cause instanceof GpuException gpu) ? gpu : new GpuException("Enqueueing a download failed", cause));
		giveUp(enqueued);
	}

	/**
	 * Enqueues no chunk from {@code enqueued} on: their blocks (one may have been given to the chunk
	 * that failed to enqueue) and the spare ones go back; the future completes once the chunks before
	 * have ended.
	 */
	private void giveUp(int enqueued) {
		List<ByteBuffer> unused = new ArrayList<>();
		boolean ended;
		synchronized (this) {
			this.window.takeBackUnenqueued(this.staging, enqueued, this.count, unused);
			this.remaining -= this.count - enqueued;
			ended = this.remaining == 0;
		}
		this.window.giveBack(unused.toArray(new ByteBuffer[0]));
		if (ended) {
			CopyPipeline.complete(this.done, this.failure);
		}
	}

}
