package dev.gpucompute.internal.stream;

import dev.gpucompute.GpuException;
import dev.gpucompute.StreamScope;
import dev.gpucompute.spi.HostThreads;

/** The implementation of {@link StreamScope}: restores the previous current stream when closed. */
final class ScopeHandle implements StreamScope {

	private final Streams streams;

	private final StreamHandle previous;

	private final Thread thread;

	private boolean closed;

	ScopeHandle(Streams streams, StreamHandle previous) {
		this.streams = streams;
		this.previous = previous;
		this.thread = Thread.currentThread();
	}

	@Override
	public void close() {
		if (this.closed) {
			return;
		}
		if (Thread.currentThread() != this.thread) {
			throw new GpuException("A stream scope must be closed on the thread that opened it ("
					+ HostThreads.describe(this.thread) + "), not on " + HostThreads.describe(Thread.currentThread()));
		}
		this.closed = true;
		this.streams.restore(this.previous);
	}

}
