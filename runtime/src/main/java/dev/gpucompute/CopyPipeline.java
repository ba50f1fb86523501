package dev.gpucompute;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeStream;

/**
 * Host↔device copies of one context. Arrays and Java buffers go through staging memory
 * ({@link HostMemory}), page-locked on CUDA: a copy of at most one chunk in one step, a larger one in
 * chunks, so that packing chunk i+1 on the host overlaps chunk i on the bus (on the CPU backend: with
 * the worker that copies it into device memory). Chunks are packed by the calling thread and, where
 * the context has copy threads, by those too; all of them are enqueued by the calling thread, which
 * may be the only one allowed to use its stream. Downloads enqueue every chunk's copy before they
 * return, since later work on the stream may overwrite the source, and unpack each chunk as soon
 * as it has arrived. {@link HostBuffer} copies go straight between its memory and the device.
 *
 * <p>Semantics, the same on every backend: an upload has packed all of its data when it returns
 * (the caller may reuse its array at once); a download's destination holds the data when its future
 * completes; a failed copy leaves the destination range with unspecified contents and holds no
 * staging memory once its future has completed (or, for an upload that throws, once its stream has
 * passed the chunks it had enqueued).
 */
final class CopyPipeline {

	private static final Logger log = LoggerFactory.getLogger(CopyPipeline.class);

	/** Packs bytes {@code [from, from + into.remaining())} of a host source into {@code into} (native order, position 0). */
	@FunctionalInterface
	interface Source {

		void pack(long from, ByteBuffer into);

	}

	/** Unpacks {@code from} (native order, position 0) into a host destination from its byte {@code at} on. */
	@FunctionalInterface
	interface Sink {

		void unpack(long at, ByteBuffer from);

	}

	/** A test seam: called before each chunk is packed, copied and unpacked; throwing simulates that step failing. */
	@FunctionalInterface
	interface Faults {

		enum Step {

			PACK, COPY, UNPACK

		}

		void before(Step step, int chunk);

	}

	private final GpuContext context;

	private final DeviceBackend backend;

	private final HostMemory host;

	private volatile Faults faults;

	CopyPipeline(GpuContext context, HostMemory host) {
		this.context = context;
		this.backend = context.backendHandle();
		this.host = host;
	}

	void injectFaults(Faults faults) {
		this.faults = faults;
	}

	private void fault(Faults.Step step, int chunk) {
		Faults current = this.faults;
		if (current != null) {
			current.before(step, chunk);
		}
	}

	private static ByteBuffer packed(ByteBuffer block, long bytes) {
		return block.duplicate().clear().limit((int) bytes).order(ByteOrder.nativeOrder());
	}

	private static void complete(CompletableFuture<Void> future, GpuException failure) {
		if (failure != null) {
			future.completeExceptionally(failure);
		}
		else {
			future.complete(null);
		}
	}

	// ---- host buffers: no staging ----------------------------------------------------------------

	/** Copies {@code bytes} of a host buffer from {@code srcOffset} to {@code dst} at {@code dstOffset}; all checked. */
	CompletableFuture<Void> upload(HostBuffer.State src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes,
			GpuStream stream, NativeStream target) {
		HostBuffer.PendingCopy copy = src.begin(new CopyName("upload", dst, dstOffset, stream), false, srcOffset, bytes);
		try {
			dst.usedOn(stream);
			fault(Faults.Step.COPY, 0);
			this.backend.copyToDevice(src.at(srcOffset), dst.nativeMemory(), dstOffset, bytes, target);
		}
		catch (RuntimeException ex) {
			src.end(copy);
			throw ex;
		}
		CompletableFuture<Void> done = new CompletableFuture<>();
		this.context.whenDone(target, (failure) -> {
			src.end(copy);
			complete(done, failure);
		});
		return done;
	}

	/** Copies {@code bytes} of {@code src} from {@code srcOffset} into a host buffer at {@code dstOffset}; all checked. */
	CompletableFuture<Void> download(DeviceBuffer src, long srcOffset, HostBuffer.State dst, long dstOffset, long bytes,
			GpuStream stream, NativeStream target) {
		HostBuffer.PendingCopy copy = dst.begin(new CopyName("download", src, srcOffset, stream), true, dstOffset, bytes);
		try {
			src.usedOn(stream);
			fault(Faults.Step.COPY, 0);
			this.backend.copyToHost(src.nativeMemory(), srcOffset, dst.at(dstOffset), bytes, target);
		}
		catch (RuntimeException ex) {
			dst.end(copy);
			throw ex;
		}
		CompletableFuture<Void> done = new CompletableFuture<>();
		this.context.whenDone(target, (failure) -> {
			dst.end(copy);
			complete(done, failure);
		});
		return done;
	}

	/** Names a copy in the error of a host-buffer access that conflicts with it; built only then. */
	record CopyName(String kind, DeviceBuffer device, long deviceOffset, GpuStream stream) {

		@Override
		public String toString() {
			return this.kind + ((this.kind.equals("upload")) ? " to " : " from ") + this.device + " at offset "
					+ this.deviceOffset + " on stream " + this.stream.name();
		}

	}

	// ---- arrays and buffers: through staging ---------------------------------------------------------

	/** Copies {@code bytes} (at least 1) packed by {@code source} to {@code dst} at {@code offset}; all checked. */
	CompletableFuture<Void> upload(DeviceBuffer dst, long offset, long bytes, GpuStream stream, NativeStream target,
			Source source) {
		if (bytes > this.host.chunkBytes()) {
			return new ChunkedUpload(dst, offset, bytes, stream, target, source).run();
		}
		ByteBuffer staging = this.host.takeStaging(bytes);
		try {
			fault(Faults.Step.PACK, 0);
			source.pack(0, packed(staging, bytes));
			dst.usedOn(stream);
			fault(Faults.Step.COPY, 0);
			this.backend.copyToDevice(staging, dst.nativeMemory(), offset, bytes, target);
		}
		catch (RuntimeException ex) {
			this.host.giveStaging(staging);
			throw ex;
		}
		CompletableFuture<Void> done = new CompletableFuture<>();
		this.context.whenDone(target, (failure) -> {
			this.host.giveStaging(staging);
			complete(done, failure);
		});
		return done;
	}

	/** Copies {@code bytes} (at least 1) of {@code src} from {@code offset} into {@code sink}; all checked. */
	CompletableFuture<Void> download(DeviceBuffer src, long offset, long bytes, GpuStream stream, NativeStream target,
			Sink sink) {
		if (bytes > this.host.chunkBytes()) {
			return chunkedDownload(src, offset, bytes, stream, target, sink);
		}
		ByteBuffer staging = this.host.takeStaging(bytes);
		try {
			src.usedOn(stream);
			fault(Faults.Step.COPY, 0);
			this.backend.copyToHost(src.nativeMemory(), offset, staging, bytes, target);
		}
		catch (RuntimeException ex) {
			this.host.giveStaging(staging);
			throw ex;
		}
		CompletableFuture<Void> done = new CompletableFuture<>();
		this.context.whenDone(target, (failure) -> {
			try {
				if (failure == null) {
					fault(Faults.Step.UNPACK, 0);
					sink.unpack(0, packed(staging, bytes));
				}
			}
			catch (RuntimeException ex) {
				failure = new GpuException("Copying the download into host memory failed", ex);
			}
			finally {
				this.host.giveStaging(staging);
			}
			complete(done, failure);
		});
		return done;
	}

	private CompletableFuture<Void> chunkedDownload(DeviceBuffer src, long offset, long bytes, GpuStream stream,
			NativeStream target, Sink sink) {
		ChunkedDownload job = new ChunkedDownload(bytes, sink);
		try {
			for (int i = 0; i < job.count; i++) {
				job.staging[i] = this.host.takeStaging(job.length(i));
			}
		}
		catch (RuntimeException ex) {
			job.giveBack(0);
			throw ex;
		}
		src.usedOn(stream);
		int enqueued = 0;
		try {
			for (; enqueued < job.count; enqueued++) {
				fault(Faults.Step.COPY, enqueued);
				this.backend.copyToHost(src.nativeMemory(), offset + enqueued * job.chunk, job.staging[enqueued],
						job.length(enqueued), target);
				int index = enqueued;
				try {
					this.context.whenDone(target, (failure) -> job.arrived(index, failure));
				}
				catch (RuntimeException ex) {
					// The chunk is on the stream with nobody to see it end: its block stays out of the pool.
					job.staging[enqueued++] = null;
					throw ex;
				}
			}
		}
		catch (RuntimeException ex) {
			job.abandon(enqueued, ex);
			throw ex;
		}
		return job.done;
	}

	/** A download in chunks: each chunk is unpacked when it has arrived, the future completes after the last. */
	private final class ChunkedDownload {

		final long chunk = CopyPipeline.this.host.chunkBytes();

		final long bytes;

		final int count;

		final ByteBuffer[] staging;

		final CompletableFuture<Void> done = new CompletableFuture<>();

		private final Sink sink;

		private final AtomicInteger remaining;

		private volatile GpuException failure;

		ChunkedDownload(long bytes, Sink sink) {
			this.bytes = bytes;
			this.count = (int) ((bytes + this.chunk - 1) / this.chunk);
			this.staging = new ByteBuffer[this.count];
			this.sink = sink;
			this.remaining = new AtomicInteger(this.count);
		}

		long length(int index) {
			return Math.min(this.chunk, this.bytes - index * this.chunk);
		}

		/** Chunk {@code index}'s copy is done (or failed, or was abandoned at close). */
		void arrived(int index, GpuException outcome) {
			if (outcome != null) {
				fail(outcome);
			}
			if (this.failure == null && CopyPipeline.this.host.execute(() -> unpack(index))) {
				return;
			}
			unpack(index);
		}

		private void unpack(int index) {
			try {
				if (this.failure == null) {
					fault(Faults.Step.UNPACK, index);
					this.sink.unpack(index * this.chunk, packed(this.staging[index], length(index)));
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
				CopyPipeline.this.host.giveStaging(block);
			}
			if (this.remaining.decrementAndGet() == 0) {
				complete(this.done, this.failure);
			}
		}

		/** Gives back the blocks from {@code from} on, which no copy uses. */
		void giveBack(int from) {
			for (int i = from; i < this.count; i++) {
				if (this.staging[i] != null) {
					CopyPipeline.this.host.giveStaging(this.staging[i]);
					this.staging[i] = null;
				}
			}
		}

		/** Enqueueing failed at chunk {@code enqueued}: the chunks before it end through {@link #arrived}. */
		void abandon(int enqueued, RuntimeException cause) {
			fail((cause instanceof GpuException gpu) ? gpu : new GpuException("Enqueueing a download failed", cause));
			giveBack(enqueued);
			if (this.remaining.addAndGet(-(this.count - enqueued)) == 0) {
				complete(this.done, this.failure);
			}
		}

	}

	/**
	 * An upload in chunks. Chunks are claimed in order by the calling thread and the copy threads,
	 * each packed into its own staging block; the calling thread enqueues them in order as they are
	 * packed, and packs one itself whenever the next is not ready. All state under this monitor.
	 */
	private final class ChunkedUpload {

		private final DeviceBuffer dst;

		private final long offset;

		private final long bytes;

		private final GpuStream stream;

		private final NativeStream target;

		private final Source source;

		private final long chunk = CopyPipeline.this.host.chunkBytes();

		private final int count;

		private final ByteBuffer[] staging;

		private final boolean[] packed;

		private int claimed;

		private int packing;

		private boolean stopped;

		private Throwable failure;

		ChunkedUpload(DeviceBuffer dst, long offset, long bytes, GpuStream stream, NativeStream target, Source source) {
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

		CompletableFuture<Void> run() {
			int helpers = Math.min(CopyPipeline.this.host.threads(), this.count - 1);
			for (int i = 0; i < helpers && CopyPipeline.this.host.execute(this::help); i++) {
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
						fault(Faults.Step.COPY, enqueued);
						CopyPipeline.this.backend.copyToDevice(this.staging[enqueued], this.dst.nativeMemory(),
								this.offset + enqueued * this.chunk, length(enqueued), this.target);
						enqueued++;
					}
				}
			}
			catch (RuntimeException | Error ex) {
				throw abort(enqueued, ex);
			}
			CompletableFuture<Void> done = new CompletableFuture<>();
			CopyPipeline.this.context.whenDone(this.target, (failure) -> {
				giveBack(0, this.count);
				complete(done, failure);
			});
			return done;
		}

		/** The chunk for the calling thread to pack, or -1 when chunk {@code enqueued} is ready to enqueue. */
		private synchronized int next(int enqueued) {
			boolean interrupted = false;
			try {
				for (;;) {
					if (this.failure != null) {
						throw rethrowable(this.failure);
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
				fault(Faults.Step.PACK, index);
				ByteBuffer block = CopyPipeline.this.host.takeStaging(length(index));
				this.staging[index] = block; // published by the monitor below
				this.source.pack(index * this.chunk, packed(block, length(index)));
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
					CopyPipeline.this.context.whenDone(this.target, (failure) -> {
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
			return rethrowable(reported);
		}

		private void giveBack(int from, int to) {
			for (int i = from; i < to; i++) {
				if (this.staging[i] != null) {
					CopyPipeline.this.host.giveStaging(this.staging[i]);
					this.staging[i] = null;
				}
			}
		}

	}

	private static RuntimeException rethrowable(Throwable failure) {
		if (failure instanceof RuntimeException runtime) {
			return runtime;
		}
		if (failure instanceof Error error) {
			throw error;
		}
		return new GpuException("A copy failed", failure);
	}

	// ---- sources and sinks ----------------------------------------------------------------------------

	static Source source(float[] src) {
		return (from, into) -> into.asFloatBuffer().put(src, (int) (from / Float.BYTES), into.remaining() / Float.BYTES);
	}

	static Source source(int[] src) {
		return (from, into) -> into.asIntBuffer().put(src, (int) (from / Integer.BYTES), into.remaining() / Integer.BYTES);
	}

	static Source source(long[] src) {
		return (from, into) -> into.asLongBuffer().put(src, (int) (from / Long.BYTES), into.remaining() / Long.BYTES);
	}

	static Source source(double[] src) {
		return (from, into) -> into.asDoubleBuffer().put(src, (int) (from / Double.BYTES), into.remaining() / Double.BYTES);
	}

	/** The remaining bytes of {@code src}; neither its position nor its limit is touched, so threads may share it. */
	static Source source(ByteBuffer src) {
		int start = src.position();
		return (from, into) -> into.put(0, src, start + (int) from, into.remaining());
	}

	static Sink sink(float[] dst) {
		return (at, from) -> from.asFloatBuffer().get(dst, (int) (at / Float.BYTES), from.remaining() / Float.BYTES);
	}

	static Sink sink(int[] dst) {
		return (at, from) -> from.asIntBuffer().get(dst, (int) (at / Integer.BYTES), from.remaining() / Integer.BYTES);
	}

	static Sink sink(long[] dst) {
		return (at, from) -> from.asLongBuffer().get(dst, (int) (at / Long.BYTES), from.remaining() / Long.BYTES);
	}

	static Sink sink(double[] dst) {
		return (at, from) -> from.asDoubleBuffer().get(dst, (int) (at / Double.BYTES), from.remaining() / Double.BYTES);
	}

	/** Into {@code dst}'s remaining bytes; its position and limit are not touched. */
	static Sink sink(ByteBuffer dst) {
		int start = dst.position();
		return (at, from) -> dst.put(start + (int) at, from, 0, from.remaining());
	}

}
