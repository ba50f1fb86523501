package dev.gpucompute.internal.graph;

import dev.gpucompute.GpuException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.StreamScope;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GraphCapture;
import dev.gpucompute.graph.GraphCaptureException;
import dev.gpucompute.graph.GraphCaptureException.Kind;
import dev.gpucompute.graph.GraphUpdate;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.spi.NativeGraph;

/**
 * The implementation of {@link GraphCapture}: the room's {@link Capture} and the stream scope that makes
 * the capture's stream current, for the thread that began it.
 */
final class CaptureHandle implements GraphCapture {

	private final Graphs room;

	private final Capture capture;

	private final GpuStream stream;

	private final StreamScope scope;

	/** Whether end() or endAndUpdate() was called; used by the owning thread only. */
	private boolean ended;

	/** Whether a graph came out of it. */
	private boolean produced;

	private boolean closed;

	CaptureHandle(Graphs room, Capture capture, GpuStream stream, StreamScope scope) {
		this.room = room;
		this.capture = capture;
		this.stream = stream;
		this.scope = scope;
	}

	@Override
	public GpuStream stream() {
		return this.stream;
	}

	@Override
	public String name() {
		return this.capture.name();
	}

	@Override
	public boolean isCapturing() {
		return !this.ended && this.capture.isActive();
	}

	@Override
	public GpuGraph end() {
		NativeGraph graph = finish();
		long captureNanos = System.nanoTime() - this.capture.startedNanos();
		GpuGraph made = this.room.instantiate(this.capture, graph, captureNanos);
		this.produced = true;
		return made;
	}

	@Override
	public GraphUpdate endAndUpdate(GpuGraph graph) {
		GraphHandle target = this.room.check(graph);
		NativeGraph captured = finish();
		long captureNanos = System.nanoTime() - this.capture.startedNanos();
		GraphUpdate outcome = this.room.update(target.state(), this.capture, captured, captureNanos);
		this.produced = true;
		return outcome;
	}

	/** Ends the capture once, on its thread; what it recorded, or the reason there is none. */
	private NativeGraph finish() {
		checkThread();
		if (this.ended) {
			throw new GraphCaptureException(Kind.ENDED, "end", "The " + this.capture + " was ended already");
		}
		this.ended = true;
		RuntimeException failure = this.capture.failure();
		if (failure != null) {
			throw new GraphCaptureException(Kind.ENDED, "end", "The " + this.capture + " failed earlier and was discarded: "
					+ failure.getMessage(), failure);
		}
		// A close ends the captures left open: after it, the end says the context closed.
		this.room.lifecycle.ensureOpen();
		if (!this.capture.isActive()) {
			throw new GraphCaptureException(Kind.ENDED, "end", "The " + this.capture + " is over: it was discarded");
		}
		return this.capture.end();
	}

	private void checkThread() {
		if (Thread.currentThread() != this.capture.thread()) {
			throw new GpuException("The " + this.capture + " can only be ended by that thread, not by '"
					+ Thread.currentThread().getName() + "': a capture and the stream scope it opened belong to the thread "
					+ "that began it");
		}
	}

	@Override
	public void close() {
		if (this.closed) {
			return;
		}
		checkThread();
		this.closed = true;
		try {
			if (this.capture.isActive()) {
				this.capture.abort();
			}
			if (!this.produced) {
				RuntimeException failure = this.capture.failure();
				this.room.captureFailed(this.capture.name(),
						(failure instanceof GraphCaptureException refusal) ? refusal.kind().name() : "DISCARDED");
			}
		}
		finally {
			this.scope.close();
		}
	}

	@Override
	public String toString() {
		return "GraphCapture[" + this.capture + (isCapturing() ? "" : ", over") + "]";
	}

}
