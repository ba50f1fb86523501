package dev.gpucompute.internal.memory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.spi.NativeStream;

/**
 * An upload in chunks through staging memory ({@link CopyPipeline}). Chunks are claimed in order
 * by the calling thread and the copy threads, each packed into a staging block of the upload's
 * {@link StagingWindow}; the calling thread enqueues them in order as they are packed (it may be the
 * only thread allowed to use its stream), and packs one itself whenever the next is not ready, so
 * chunk i is on the bus while chunk i+1 is packed. When the window holds fewer blocks than the
 * upload has chunks, each chunk's block comes back for a later chunk once the stream has passed it
 * (a completion per chunk), and a packer without a block waits for one: the calling thread waits
 * (at most the staging timeout for each block, then the upload stops with a
 * {@link dev.gpucompute.StagingExhaustedException}), a copy thread leaves and is called again when a
 * block comes back. {@link #run} returns when every chunk is packed and enqueued: the caller may
 * reuse its array at once, so the upload cannot leave chunks to be packed later. All state is
 * guarded by this object's monitor.
 */
final class ChunkedUpload {

	private static final Logger log = LoggerFactory.getLogger(ChunkedUpload.class);

	private final CopyPipeline copies;

	private final HostMemory host;

	private final BufferHandle dst;

	private final long offset;

	private final long bytes;

	private final GpuStream stream;

	private final NativeStream target;

	private final CopyPipeline.Source source;

	private final long chunk;

	private final int count;

	/** The block of each chunk from its claim until it is given back or recycled. */
	private final ByteBuffer[] staging;

	private final boolean[] packed;

	@SuppressWarnings("NullAway.Init") // set by run(), before any chunk runs; nothing reads it before
	private StagingWindow window;

	/** Whether chunks give their blocks back as the stream passes them (the window holds fewer than all). */
	private boolean recycling;

	private int claimed;

	private int packing;

	private int helpers;

	private int helpersWanted;

	private boolean stopped;

	private @Nullable Throwable failure;

	/** Completions registered whose action has not run yet. */
	private int pendingCompletions;

	/** The last chunk is enqueued and its completion registered: the last completion to run ends the upload. */
	private boolean allEnqueued;

	/** The upload's future, handed to the last chunk's completion. */
	private @Nullable CompletableFuture<Void> future;

	/** The first failure the chunks' completions reported, for the upload's future. */
	private @Nullable GpuException streamFailure;

	ChunkedUpload(CopyPipeline copies, BufferHandle dst, long offset, long bytes, GpuStream stream,
			NativeStream target, CopyPipeline.Source source) {
		this.copies = copies;
		this.host = copies.host();
		this.chunk = this.host.chunkBytes();
		this.dst = dst;
		this.offset = offset;
		this.bytes = bytes;
		this.stream = stream;
		this.target = target;
		this.source = source;
		this.count = (int) ((bytes + this.chunk - 1) / this.chunk);
		this.staging = new ByteBuffer[this.count];
		this.packed = new boolean[this.count];
	}

	private long length(int index) {
		return Math.min(this.chunk, this.bytes - index * this.chunk);
	}

	/**
	 * Packs and enqueues every chunk; returns the future of the whole upload, which completes once
	 * the stream has passed every chunk and their staging is back. Throws when the staging cannot be
	 * had ({@link dev.gpucompute.StagingExhaustedException}, holding nothing), when no block comes back
	 * from the stream within the staging timeout (the same exception) or a chunk cannot be packed or
	 * enqueued (see {@link #abort}).
	 */
	CompletableFuture<Void> run() {
		StagingWindow blocks = new StagingWindow(this.host, this.chunk, this.count);
		synchronized (this) {
			this.window = blocks;
			this.recycling = blocks.held() < this.count;
			this.helpersWanted = Math.min(this.host.threads(), this.count - 1);
		}
		for (int i = 0; i < this.helpersWanted; i++) {
			synchronized (this) {
				this.helpers++;
			}
			startHelper();
		}
		int enqueued = 0;
		try {
			this.dst.usedOn(this.stream);
			while (enqueued < this.count) {
				int work = next(enqueued);
				if (work >= 0) {
					pack(work);
				}
				else {
					this.copies.fault(CopyFaults.Step.COPY, enqueued);
					this.copies.backend().copyToDevice(this.staging[enqueued], this.dst.nativeMemory(),
							this.offset + enqueued * this.chunk, length(enqueued), this.target);
					int index = enqueued++;
					if (index == this.count - 1) {
						return whenLastDone(index);
					}
					if (this.recycling) {
						whenDone(index);
					}
				}
			}
			throw new IllegalStateException("unreachable: the last chunk returns");
		}
		catch (RuntimeException | Error ex) {
			throw abort(enqueued, ex);
		}
	}

	/** Starts a copy thread's share, counted in {@link #helpers} already, if one is free to take it. */
	private void startHelper() {
		if (!this.host.execute(this::help)) {
			synchronized (this) {
				this.helpers--;
			}
		}
	}

	/**
	 * The chunk for the calling thread to pack (its block taken from the window), or -1 when chunk
	 * {@code enqueued} is ready to enqueue. Waits while neither is the case: for a packer, or for a
	 * block to come back from the stream, at most the staging timeout for the block.
	 * @throws dev.gpucompute.StagingExhaustedException when chunk {@code enqueued} has no block and none
	 * comes back within the staging timeout
	 */
	private synchronized int next(int enqueued) {
		boolean interrupted = false;
		boolean announced = false;
		long remaining = this.host.ownBlockTimeoutNanos();
		try {
			for (;;) {
				if (this.failure != null) {
					throw CopyPipeline.rethrowable(this.failure);
				}
				if (this.packed[enqueued]) {
					return -1;
				}
				if (this.claimed < this.count && this.window.hasSpare()) {
					return claim();
				}
				// Only the stream can give chunk enqueued a block (a packer has none to finish): bounded, so
				// that an upload behind a long kernel fails rather than holds its caller without limit.
				boolean stalledOnStream = this.claimed == enqueued;
				if (stalledOnStream && remaining <= 0) {
					throw this.host.ownBlocksLate("an upload", this.chunk, this.window.held(), enqueued, this.count,
							this.stream.name());
				}
				if (!announced && this.claimed < this.count) {
					// Waiting for the stream: a backend that polls for completions polls closely meanwhile.
					this.copies.backend().completionWaitStarted();
					announced = true;
				}
				try {
					if (stalledOnStream) {
						long start = System.nanoTime();
						TimeUnit.NANOSECONDS.timedWait(this, remaining);
						remaining -= System.nanoTime() - start;
					}
					else {
						wait(); // for a packer, which ends
					}
				}
				catch (InterruptedException ex) {
					interrupted = true; // the copy finishes; the flag is restored for the caller
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

	/** Claims the next chunk with a spare block, with the monitor held. */
	private int claim() {
		int index = this.claimed++;
		this.staging[index] = this.window.poll();
		this.packing++;
		return index;
	}

	/** A copy thread's share: packs chunks until none is left to claim or no block is spare. */
	private void help() {
		for (;;) {
			int index;
			synchronized (this) {
				if (this.stopped || this.failure != null || this.claimed >= this.count || !this.window.hasSpare()) {
					this.helpers--;
					return;
				}
				index = claim();
			}
			pack(index);
		}
	}

	/** Packs a claimed chunk into its block; its failure stops the upload. */
	private void pack(int index) {
		Throwable thrown = null;
		try {
			this.copies.fault(CopyFaults.Step.PACK, index);
			this.source.pack(index * this.chunk, CopyPipeline.packed(this.staging[index], length(index)));
		}
		catch (RuntimeException | Error ex) {
			thrown = ex;
		}
		synchronized (this) {
			this.packing--;
			if (thrown == null) {
				this.packed[index] = true;
			}
			else if (this.failure == null) {
				this.failure = thrown;
			}
			notifyAll();
		}
	}

	/** Registers the completion that brings chunk {@code index}'s block back for a later chunk. */
	private void whenDone(int index) {
		synchronized (this) {
			this.pendingCompletions++;
		}
		try {
			this.copies.completions().whenDone(this.target, (failure) -> chunkDone(index, failure));
		}
		catch (RuntimeException ex) {
			synchronized (this) {
				this.pendingCompletions--;
			}
			loseUnwatched(index, index + 1);
			throw ex;
		}
	}

	/** Registers the last chunk's completion, which carries the upload's future. */
	private CompletableFuture<Void> whenLastDone(int last) {
		synchronized (this) {
			this.pendingCompletions++;
			this.allEnqueued = true;
		}
		try {
			return this.copies.completions().whenDone(this.target, (CompletableFuture<Void> done, GpuException failure) -> {
				synchronized (this) {
					this.future = done;
				}
				chunkDone(last, failure);
			});
		}
		catch (RuntimeException ex) {
			synchronized (this) {
				this.pendingCompletions--;
				this.allEnqueued = false;
				this.stopped = true;
			}
			// The other chunks' completions, if any, still give their blocks back.
			loseUnwatched(this.recycling ? last : 0, last + 1);
			ByteBuffer[] spare;
			synchronized (this) {
				spare = this.window.drainSpare();
			}
			this.window.giveBack(spare);
			throw ex;
		}
	}

	/**
	 * A completion could not be registered for chunks {@code [from, to)}, which are on the stream:
	 * nobody will see the stream pass them, so their blocks never go back to the pool (the stream may
	 * still read them); their room in the budget does.
	 */
	private void loseUnwatched(int from, int to) {
		List<ByteBuffer> lost = new ArrayList<>();
		synchronized (this) {
			this.window.takeBack(this.staging, from, to, lost);
		}
		for (ByteBuffer block : lost) {
			this.host.loseStaging(block);
		}
	}

	/**
	 * The stream has passed chunk {@code index}: its block goes to a later chunk or back; the last
	 * completion to run ends the upload (gives back what is left, completes its future).
	 */
	private void chunkDone(int index, GpuException failure) {
		ByteBuffer giveBack = null;
		ByteBuffer[] rest = null;
		CompletableFuture<Void> ended = null;
		GpuException outcome = null;
		boolean helper = false;
		synchronized (this) {
			if (failure != null) {
				if (this.streamFailure == null) {
					this.streamFailure = failure;
				}
				else if (this.streamFailure != failure) {
					this.streamFailure.addSuppressed(failure);
				}
				if (failure instanceof ContextClosedException && this.failure == null && !this.allEnqueued) {
					// Abandoned at close: the calling thread stops enqueueing instead of waiting for more blocks.
					this.failure = failure;
				}
			}
			ByteBuffer block = this.staging[index];
			this.staging[index] = null;
			if (block != null) {
				giveBack = this.window.recycle(block, !this.stopped && this.failure == null && this.claimed < this.count);
				if (giveBack == null && this.helpers < this.helpersWanted) {
					this.helpers++;
					helper = true;
				}
			}
			notifyAll();
		}
		// The chunk counts as done only once its block is back: the chunk done last, on another thread,
		// completes the future after every block is back.
		this.window.giveBack(giveBack);
		synchronized (this) {
			this.pendingCompletions--;
			if (this.pendingCompletions == 0 && (this.allEnqueued || this.stopped)) {
				List<ByteBuffer> left = new ArrayList<>(List.of(this.window.drainSpare()));
				this.window.takeBack(this.staging, 0, this.count, left);
				rest = left.toArray(new ByteBuffer[0]);
				ended = this.future;
				outcome = this.streamFailure;
			}
			notifyAll();
		}
		if (rest != null) {
			this.window.giveBack(rest);
		}
		if (helper) {
			startHelper();
		}
		if (ended != null) {
			CopyPipeline.complete(ended, outcome);
		}
	}

	/**
	 * Stops the upload after {@code enqueued} chunks went on the stream: waits for chunks being
	 * packed, gives back the blocks no copy uses and the others once the stream has passed them.
	 */
	private RuntimeException abort(int enqueued, Throwable cause) {
		Throwable reported;
		List<ByteBuffer> unused = new ArrayList<>();
		List<ByteBuffer> onStream = new ArrayList<>();
		synchronized (this) {
			this.stopped = true;
			if (this.failure == null) {
				this.failure = cause;
			}
			reported = this.failure;
			boolean interrupted = false;
			while (this.packing > 0) {
				try {
					wait();
				}
				catch (InterruptedException ex) {
					interrupted = true;
				}
			}
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
			this.window.takeBackUnenqueued(this.staging, enqueued, this.count, unused);
			if (!this.recycling) {
				// No chunk has a completion of its own: one gives back those on the stream.
				this.window.takeBack(this.staging, 0, enqueued, onStream);
			}
		}
		this.window.giveBack(unused.toArray(new ByteBuffer[0]));
		if (!onStream.isEmpty()) {
			try {
				this.copies.completions().whenDone(this.target, (failure) -> {
					if (failure != null) {
						log.warn("Work on stream {} failed before an upload that had failed itself ({}): {}",
								this.stream.name(), reported, failure.getMessage());
					}
					this.window.giveBack(onStream.toArray(new ByteBuffer[0]));
				});
			}
			catch (RuntimeException ex) {
				reported.addSuppressed(ex); // its chunks stay out of the pool: the stream may still read them
				for (ByteBuffer block : onStream) {
					this.host.loseStaging(block);
				}
			}
		}
		return CopyPipeline.rethrowable(reported);
	}

}
