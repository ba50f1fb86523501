package dev.gpucompute.internal.memory;

import java.util.concurrent.CompletableFuture;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.GraphUse;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * Copies and buffer uses recorded by a graph capture instead of run: what a replay must check and
 * order for them ({@link GraphUse}s), and the copies between a device buffer and a {@code HostBuffer},
 * the only host copies a capture records (they need no staging: the replay's copy reads or writes the
 * host buffer itself when it runs).
 */
final class CapturedCopies {

	private CapturedCopies() {
	}

	/** A device buffer a graph uses: open at every replay, and ordered on the replay's stream. */
	static GraphUse device(DeviceBufferState buffer) {
		return new DeviceUse(buffer);
	}

	/**
	 * Records an upload from a host buffer: the copy runs at each replay and reads the host buffer
	 * then. The future is complete at once: nothing ran.
	 */
	static CompletableFuture<Void> upload(Capture capture, HostBufferHandle.State src, long srcOffset, BufferHandle dst,
			long dstOffset, long bytes, NativeStream target) {
		capture.uses(device(dst.state()));
		capture.uses(new HostUse(src, false, srcOffset, bytes, "upload to " + dst));
		dst.state().room.backend.copyToDevice(src.at(srcOffset), dst.nativeMemory(), dstOffset, bytes, target);
		return CompletableFuture.completedFuture(null);
	}

	/** Records a download into a host buffer, written at each replay. The future is complete at once. */
	static CompletableFuture<Void> download(Capture capture, BufferHandle src, long srcOffset, HostBufferHandle.State dst,
			long dstOffset, long bytes, NativeStream target) {
		capture.uses(device(src.state()));
		capture.uses(new HostUse(dst, true, dstOffset, bytes, "download from " + src));
		src.state().room.backend.copyToHost(src.nativeMemory(), srcOffset, dst.at(dstOffset), bytes, target);
		return CompletableFuture.completedFuture(null);
	}

	private record DeviceUse(DeviceBufferState buffer) implements GraphUse {

		@Override
		public @Nullable Object beforeReplay(GpuStream stream) {
			if (this.buffer.isClosed()) {
				throw new GpuException("a device buffer of " + this.buffer.memory.byteSize() + " bytes it uses was "
						+ "closed; a graph replays with the buffers it captured: keep them open while the graph lives, "
						+ "or capture again with other buffers");
			}
			this.buffer.usedOn(stream);
			return null;
		}

		@Override
		public Object identity() {
			return this.buffer;
		}

	}

	/**
	 * A range of a host buffer a recorded copy reads or writes: at every replay it counts as a pending
	 * copy of the buffer until the replay ends, so that the buffer's checked puts and gets, and its
	 * release after close, treat it as they treat a copy.
	 */
	private static final class HostUse implements GraphUse {

		private final HostBufferHandle.State buffer;

		private final boolean writesHost;

		private final long offset;

		private final long bytes;

		private final String what;

		HostUse(HostBufferHandle.State buffer, boolean writesHost, long offset, long bytes, String what) {
			this.buffer = buffer;
			this.writesHost = writesHost;
			this.offset = offset;
			this.bytes = bytes;
			this.what = what;
		}

		@Override
		public Object beforeReplay(GpuStream stream) {
			try {
				return this.buffer.begin(this, this.writesHost, this.offset, this.bytes);
			}
			catch (GpuException ex) {
				throw new GpuException("a host buffer of " + this.buffer.bytes + " bytes it uses was closed; keep the "
						+ "buffers a graph uses open while it lives", ex);
			}
		}

		@Override
		public void afterReplay(Object token) {
			this.buffer.end((HostBufferHandle.PendingCopy) token);
		}

		@Override
		public boolean tracksReplays() {
			return true;
		}

		@Override
		public String toString() {
			return "graph's " + this.what;
		}

	}

}
