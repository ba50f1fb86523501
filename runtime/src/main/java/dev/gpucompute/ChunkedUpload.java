package dev.gpucompute;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.spi.NativeStream;

/**
 * An upload in chunks through staging memory ({@link CopyPipeline}). Chunks are claimed in order
 * by the calling thread and the copy threads, each packed into its own staging block; the calling
 * thread enqueues them in order as they are packed (it may be the only thread allowed to use its
 * stream), and packs one itself whenever the next is not ready, so chunk i is on the bus while
 * chunk i+1 is packed. {@link #run} returns when every chunk is packed and enqueued. All state is
 * guarded by this object's monitor.
 */
final class ChunkedUpload {

	private static final Logger log = LoggerFactory.getLogger(ChunkedUpload.class);

	private final CopyPipeline copies;

	private final HostMemory host;

	private final DeviceBuffer dst;

	private final long offset;

	private final long bytes;

	private final GpuStream stream;

	private final NativeStream target;

	private final CopyPipeline.Source source;

	private final long chunk;

	private final int count;

	private final ByteBuffer[] staging;

	private final boolean[] packed;

	private int claimed;

	private int packing;

	private boolean stopped;

	private Throwable failure;

	ChunkedUpload(CopyPipeline copies, DeviceBuffer dst, long offset, long bytes, GpuStream stream,
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
	 * Packs and enqueues every chunk; returns the future of the whole upload, whose staging goes back
	 * when the stream has passed it. Throws when a chunk cannot be packed or enqueued (see
	 * {@link #abort}).
	 */
	CompletableFuture<Void> run() {
		int helpers = Math.min(this.host.threads(), this.count - 1);
		for (int i = 0; i < helpers && this.host.execute(this::help); i++) {
			// a helper that starts after the work is done finds nothing to claim and ends
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
					this.copies.fault(CopyPipeline.Faults.Step.COPY, enqueued);
					this.copies.backend().copyToDevice(this.staging[enqueued], this.dst.nativeMemory(),
							this.offset + enqueued * this.chunk, length(enqueued), this.target);
					enqueued++;
				}
			}
		}
		catch (RuntimeException | Error ex) {
			throw abort(enqueued, ex);
		}
		return this.copies.context().whenDone(this.target, (CompletableFuture<Void> done, GpuException failure) -> {
			giveBack(0, this.count);
			CopyPipeline.complete(done, failure);
		});
	}

	/** The chunk for the calling thread to pack, or -1 when chunk {@code enqueued} is ready to enqueue. */
	private synchronized int next(int enqueued) {
		boolean interrupted = false;
		try {
			for (;;) {
				if (this.failure != null) {
					throw CopyPipeline.rethrowable(this.failure);
				}
				if (this.packed[enqueued]) {
					return -1;
				}
				if (this.claimed < this.count) {
					this.packing++;
					return this.claimed++;
				}
				try {
					wait();
				}
				catch (InterruptedException ex) {
					interrupted = true; // the copy finishes; the flag is restored for the caller
				}
			}
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** A copy thread's share: packs chunks until none is left to claim. */
	private void help() {
		for (;;) {
			int index;
			synchronized (this) {
				if (this.stopped || this.failure != null || this.claimed >= this.count) {
					return;
				}
				index = this.claimed++;
				this.packing++;
			}
			pack(index);
		}
	}

	/** Packs a claimed chunk; its failure stops the upload. */
	private void pack(int index) {
		Throwable thrown = null;
		try {
			this.copies.fault(CopyPipeline.Faults.Step.PACK, index);
			ByteBuffer block = this.host.takeStaging(length(index));
			this.staging[index] = block; // published by the monitor below
			this.source.pack(index * this.chunk, CopyPipeline.packed(block, length(index)));
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

	/**
	 * Stops the upload after {@code enqueued} chunks went on the stream: waits for chunks being
	 * packed, gives back the blocks no copy uses and the others once the stream has passed them.
	 */
	private RuntimeException abort(int enqueued, Throwable cause) {
		Throwable reported;
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
		}
		giveBack(enqueued, this.count);
		if (enqueued > 0) {
			try {
				this.copies.context().whenDone(this.target, (failure) -> {
					if (failure != null) {
						log.warn("Work on stream {} failed before an upload that had failed itself ({}): {}",
								this.stream.name(), reported, failure.getMessage());
					}
					giveBack(0, enqueued);
				});
			}
			catch (RuntimeException ex) {
				reported.addSuppressed(ex); // its chunks stay out of the pool: the stream may still read them
			}
		}
		return CopyPipeline.rethrowable(reported);
	}

	private void giveBack(int from, int to) {
		for (int i = from; i < to; i++) {
			if (this.staging[i] != null) {
				this.host.giveStaging(this.staging[i]);
				this.staging[i] = null;
			}
		}
	}

}
