package dev.gpucompute;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import dev.gpucompute.spi.NativeStream;

/**
 * A download in chunks through staging memory ({@link CopyPipeline}). Every chunk's copy is
 * enqueued at once, since later work on the stream may overwrite the source; each chunk is
 * unpacked into the destination when it has arrived (on a copy thread where there is one), while
 * later chunks are still on the bus; the future completes after the last chunk's staging is back.
 */
final class ChunkedDownload {

	private final CopyPipeline copies;

	private final HostMemory host;

	private final long chunk;

	private final long bytes;

	private final int count;

	private final ByteBuffer[] staging;

	private final CompletableFuture<Void> done = new CompletableFuture<>();

	private final CopyPipeline.Sink sink;

	private final AtomicInteger remaining;

	private volatile GpuException failure;

	ChunkedDownload(CopyPipeline copies, long bytes, CopyPipeline.Sink sink) {
		this.copies = copies;
		this.host = copies.host();
		this.chunk = this.host.chunkBytes();
		this.bytes = bytes;
		this.count = (int) ((bytes + this.chunk - 1) / this.chunk);
		this.staging = new ByteBuffer[this.count];
		this.sink = sink;
		this.remaining = new AtomicInteger(this.count);
	}

	/**
	 * Takes the staging blocks, enqueues every chunk's copy on {@code stream} with a completion each,
	 * and returns the future of the whole download. Throws when a block or a copy cannot be had; the
	 * chunks enqueued before end through their completions.
	 */
	CompletableFuture<Void> start(DeviceBuffer src, long offset, GpuStream stream, NativeStream target) {
		try {
			for (int i = 0; i < this.count; i++) {
				this.staging[i] = this.host.takeStaging(length(i));
			}
		}
		catch (RuntimeException ex) {
			giveBack(0);
			throw ex;
		}
		src.usedOn(stream);
		int enqueued = 0;
		try {
			for (; enqueued < this.count; enqueued++) {
				this.copies.fault(CopyPipeline.Faults.Step.COPY, enqueued);
				this.copies.backend().copyToHost(src.nativeMemory(), offset + enqueued * this.chunk, this.staging[enqueued],
						length(enqueued), target);
				int index = enqueued;
				try {
					this.copies.context().whenDone(target, (failure) -> arrived(index, failure));
				}
				catch (RuntimeException ex) {
					// The chunk is on the stream with nobody to see it end: its block stays out of the pool.
					this.staging[enqueued++] = null;
					throw ex;
				}
			}
		}
		catch (RuntimeException ex) {
			abandon(enqueued, ex);
			throw ex;
		}
		return this.done;
	}

	private long length(int index) {
		return Math.min(this.chunk, this.bytes - index * this.chunk);
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
				this.copies.fault(CopyPipeline.Faults.Step.UNPACK, index);
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

	private synchronized void fail(GpuException outcome) {
		if (this.failure == null) {
			this.failure = outcome;
		}
		else if (this.failure != outcome && !(outcome instanceof ContextClosedException)) {
			this.failure.addSuppressed(outcome);
		}
	}

	private void finish(int index) {
		ByteBuffer block = this.staging[index];
		if (block != null) {
			this.host.giveStaging(block);
		}
		if (this.remaining.decrementAndGet() == 0) {
			CopyPipeline.complete(this.done, this.failure);
		}
	}

	/** Gives back the blocks from {@code from} on, which no copy uses. */
	private void giveBack(int from) {
		for (int i = from; i < this.count; i++) {
			if (this.staging[i] != null) {
				this.host.giveStaging(this.staging[i]);
				this.staging[i] = null;
			}
		}
	}

	/** Enqueueing failed at chunk {@code enqueued}: the chunks before it end through {@link #arrived}. */
	private void abandon(int enqueued, RuntimeException cause) {
		fail((cause instanceof GpuException gpu) ? gpu : new GpuException("Enqueueing a download failed", cause));
		giveBack(enqueued);
		if (this.remaining.addAndGet(-(this.count - enqueued)) == 0) {
			CopyPipeline.complete(this.done, this.failure);
		}
	}

}
