package dev.gpucompute.internal.memory;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.spi.DeviceBackend;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * Host↔device copies of one context. Arrays and Java buffers go through staging memory
 * ({@link HostMemory}), page-locked on CUDA: a copy of at most one chunk in one step, a larger one in
 * chunks, so that packing chunk i+1 on the host overlaps chunk i on the bus (on the CPU backend: with
 * the worker that copies it into device memory). Chunks are packed by the calling thread and, where
 * the context has copy threads, by those too; all of them are enqueued by the calling thread, which
 * may be the only one allowed to use its stream. Downloads enqueue every chunk's copy before they
 * return, since later work on the stream may overwrite the source, and unpack each chunk as soon
 * as it has arrived. {@link dev.gpucompute.HostBuffer} copies go straight between its memory and the device.
 *
 * <p>Staging is bounded by the context's staging budget ({@link StagingBudget}): a copy of one
 * chunk or less takes one block, waiting for room; a larger copy takes a few chunk-sized blocks
 * ({@link StagingWindow}) and reuses each once the stream has passed its chunk, so the calling
 * thread of a copy larger than its blocks returns only when the last of its chunks are enqueued.
 * A copy that finds no room within the staging timeout fails with {@link dev.gpucompute.StagingExhaustedException}
 * before anything is enqueued; one that waits longer than the staging timeout for one of its own
 * blocks to come back (its stream held by earlier work) fails with it too, after the chunks it
 * enqueued, which end through their completions. Later chunks are never left to those completions to
 * enqueue: work the caller enqueues on the stream after the call would overtake them.
 *
 * <p>Semantics, the same on every backend: an upload has packed all of its data when it returns
 * (the caller may reuse its array at once); a download's destination holds the data when its future
 * completes; a failed copy leaves the destination range with unspecified contents and holds no
 * staging memory once its future has completed (or, for an upload that throws, once its stream has
 * passed the chunks it had enqueued). Each copy is one of the context's operations that close lets
 * finish ({@link ContextState#beginWork()}): a copy begun before close enqueues all of its work and
 * registers its future before close waits for the device.
 */
final class CopyPipeline {

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

	private final ContextState lifecycle;

	private final ContextCompletions completions;

	private final DeviceBackend backend;

	private final HostMemory host;

	private final CopyFaults faults;

	CopyPipeline(ContextState lifecycle, DeviceBackend backend, ContextCompletions completions, HostMemory host,
			CopyFaults faults) {
		this.lifecycle = lifecycle;
		this.completions = completions;
		this.backend = backend;
		this.host = host;
		this.faults = faults;
	}

	/** The completions of the copies' context: a copy's future completes through them. */
	ContextCompletions completions() {
		return this.completions;
	}

	DeviceBackend backend() {
		return this.backend;
	}

	HostMemory host() {
		return this.host;
	}

	void fault(CopyFaults.Step step, int chunk) {
		this.faults.before(step, chunk);
	}

	/** A native-order view of the first {@code bytes} of a staging block, position 0. */
	static ByteBuffer packed(ByteBuffer block, long bytes) {
		return block.duplicate().clear().limit((int) bytes).order(ByteOrder.nativeOrder());
	}

	static void complete(CompletableFuture<Void> future, @Nullable GpuException failure) {
		if (failure != null) {
			future.completeExceptionally(failure);
		}
		else {
			future.complete(null);
		}
	}

	// ---- host buffers: no staging ----------------------------------------------------------------

	/** Copies {@code bytes} of a host buffer from {@code srcOffset} to {@code dst} at {@code dstOffset}; all checked. */
	CompletableFuture<Void> upload(HostBufferHandle.State src, long srcOffset, BufferHandle dst, long dstOffset, long bytes,
			GpuStream stream, NativeStream target) {
		this.lifecycle.beginWork();
		try {
			return uploadHost(src, srcOffset, dst, dstOffset, bytes, stream, target);
		}
		finally {
			this.lifecycle.endWork();
		}
	}

	private CompletableFuture<Void> uploadHost(HostBufferHandle.State src, long srcOffset, BufferHandle dst, long dstOffset,
			long bytes, GpuStream stream, NativeStream target) {
		HostBufferHandle.PendingCopy copy = src.begin(new CopyName("upload", dst, dstOffset, stream), false, srcOffset, bytes);
		try {
			dst.usedOn(stream);
			fault(CopyFaults.Step.COPY, 0);
			this.backend.copyToDevice(src.at(srcOffset), dst.nativeMemory(), dstOffset, bytes, target);
		}
		catch (RuntimeException ex) {
			src.end(copy);
			throw ex;
		}
		return this.completions.whenDone(target, (CompletableFuture<Void> done, GpuException failure) -> {
			src.end(copy);
			complete(done, failure);
		});
	}

	/** Copies {@code bytes} of {@code src} from {@code srcOffset} into a host buffer at {@code dstOffset}; all checked. */
	CompletableFuture<Void> download(BufferHandle src, long srcOffset, HostBufferHandle.State dst, long dstOffset, long bytes,
			GpuStream stream, NativeStream target) {
		this.lifecycle.beginWork();
		try {
			return downloadHost(src, srcOffset, dst, dstOffset, bytes, stream, target);
		}
		finally {
			this.lifecycle.endWork();
		}
	}

	private CompletableFuture<Void> downloadHost(BufferHandle src, long srcOffset, HostBufferHandle.State dst, long dstOffset,
			long bytes, GpuStream stream, NativeStream target) {
		HostBufferHandle.PendingCopy copy = dst.begin(new CopyName("download", src, srcOffset, stream), true, dstOffset, bytes);
		try {
			src.usedOn(stream);
			fault(CopyFaults.Step.COPY, 0);
			this.backend.copyToHost(src.nativeMemory(), srcOffset, dst.at(dstOffset), bytes, target);
		}
		catch (RuntimeException ex) {
			dst.end(copy);
			throw ex;
		}
		return this.completions.whenDone(target, (CompletableFuture<Void> done, GpuException failure) -> {
			dst.end(copy);
			complete(done, failure);
		});
	}

	/** Names a copy in the error of a host-buffer access that conflicts with it; built only then. */
	record CopyName(String kind, BufferHandle device, long deviceOffset, GpuStream stream) {

		@Override
		public String toString() {
			return this.kind + ((this.kind.equals("upload")) ? " to " : " from ") + this.device + " at offset "
					+ this.deviceOffset + " on stream " + this.stream.name();
		}

	}

	// ---- arrays and buffers: through staging ---------------------------------------------------------

	/** Copies {@code bytes} (at least 1) packed by {@code source} to {@code dst} at {@code offset}; all checked. */
	CompletableFuture<Void> upload(BufferHandle dst, long offset, long bytes, GpuStream stream, NativeStream target,
			Source source) {
		this.lifecycle.beginWork();
		try {
			return uploadStaged(dst, offset, bytes, stream, target, source);
		}
		finally {
			this.lifecycle.endWork();
		}
	}

	private CompletableFuture<Void> uploadStaged(BufferHandle dst, long offset, long bytes, GpuStream stream,
			NativeStream target, Source source) {
		if (bytes > this.host.chunkBytes()) {
			return new ChunkedUpload(this, dst, offset, bytes, stream, target, source).run();
		}
		ByteBuffer staging = this.host.takeStaging(bytes);
		try {
			fault(CopyFaults.Step.PACK, 0);
			source.pack(0, packed(staging, bytes));
			dst.usedOn(stream);
			fault(CopyFaults.Step.COPY, 0);
			this.backend.copyToDevice(staging, dst.nativeMemory(), offset, bytes, target);
		}
		catch (RuntimeException ex) {
			this.host.giveStaging(staging);
			throw ex;
		}
		return whenStagedDone(staging, target, (CompletableFuture<Void> done, GpuException failure) -> {
			this.host.giveStaging(staging);
			complete(done, failure);
		});
	}

	/** Copies {@code bytes} (at least 1) of {@code src} from {@code offset} into {@code sink}; all checked. */
	CompletableFuture<Void> download(BufferHandle src, long offset, long bytes, GpuStream stream, NativeStream target,
			Sink sink) {
		this.lifecycle.beginWork();
		try {
			return downloadStaged(src, offset, bytes, stream, target, sink);
		}
		finally {
			this.lifecycle.endWork();
		}
	}

	private CompletableFuture<Void> downloadStaged(BufferHandle src, long offset, long bytes, GpuStream stream,
			NativeStream target, Sink sink) {
		if (bytes > this.host.chunkBytes()) {
			return new ChunkedDownload(this, bytes, sink).start(src, offset, stream, target);
		}
		ByteBuffer staging = this.host.takeStaging(bytes);
		try {
			src.usedOn(stream);
			fault(CopyFaults.Step.COPY, 0);
			this.backend.copyToHost(src.nativeMemory(), offset, staging, bytes, target);
		}
		catch (RuntimeException ex) {
			this.host.giveStaging(staging);
			throw ex;
		}
		return whenStagedDone(staging, target, (CompletableFuture<Void> done, GpuException outcome) -> {
			GpuException failure = outcome;
			try {
				if (failure == null) {
					fault(CopyFaults.Step.UNPACK, 0);
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
	}

	/**
	 * The future of a one-step copy through {@code staging} that is on {@code target}: {@code action}
	 * (which gives the block back) completes it once the stream has passed the copy.
	 */
	private CompletableFuture<Void> whenStagedDone(ByteBuffer staging, NativeStream target,
			BiConsumer<CompletableFuture<Void>, GpuException> action) {
		try {
			fault(CopyFaults.Step.WATCH, 0);
			return this.completions.whenDone(target, action);
		}
		catch (RuntimeException ex) {
			// On the stream with nobody to see it end: the block stays out of the pool (the stream may still
			// use it), its room in the budget comes back, as for a chunk of a chunked copy.
			this.host.loseStaging(staging);
			throw ex;
		}
	}

	/** {@code failure} to throw: itself when unchecked (an {@link Error} is thrown here), else wrapped. */
	static RuntimeException rethrowable(Throwable failure) {
		if (failure instanceof RuntimeException runtime) {
			return runtime;
		}
		if (failure instanceof Error error) {
			throw error;
		}
		return new GpuException("A copy failed", failure);
	}

	// ---- sources and sinks ----------------------------------------------------------------------------

	/** Packs {@code src}'s bytes ({@link HostArray#getBytes}, which looks at the element type per chunk). */
	static Source source(HostArray src) {
		return src::getBytes;
	}

	/**
	 * Unpacks into {@code dst}, the destination of a copy ({@code what}), with {@link HostArray#putBytes}.
	 * @throws IllegalArgumentException when {@code dst} is a read-only {@code ByteBuffer}: refused here,
	 * before anything is enqueued
	 */
	static Sink sink(HostArray dst, String what) {
		if (dst.isReadOnly()) {
			throw new IllegalArgumentException("The " + what + " is a read-only buffer");
		}
		return dst::putBytes;
	}

}
