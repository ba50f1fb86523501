package dev.gpucompute.cpu;

import dev.gpucompute.GpuException;
import dev.gpucompute.spi.NativeGraph;
import dev.gpucompute.spi.NativeGraphExec;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * An instantiated graph of the CPU backend: a replay is one operation on its stream
 * ({@link CpuGraphRun}), ordered there like any other, and after the previous replay of this graph
 * when that was on another stream (as CUDA orders launches of one {@code CUgraphExec}).
 *
 * <p>Thread-safe: launches and updates take this object's lock, held only to enqueue.
 */
final class CpuGraphExec implements NativeGraphExec {

	// guarded by this
	private CpuGraph graph;

	/** The stream and operation of the latest replay; guarded by this. */
	private @Nullable CpuStream lastStream;

	private long lastSeq;

	private boolean destroyed;

	CpuGraphExec(CpuGraph graph) {
		this.graph = graph;
	}

	@Override
	public synchronized void launch(NativeStream stream) {
		if (this.destroyed) {
			throw new GpuException("The graph was destroyed");
		}
		CpuStream target = (CpuStream) stream;
		CpuStream previous = this.lastStream;
		if (previous != null && previous != target && !previous.reached(this.lastSeq)) {
			target.enqueue(new CpuStreamOps.Wait(previous, this.lastSeq));
		}
		CpuGraphRun run = new CpuGraphRun(this.graph, target);
		target.enqueue(run);
		this.lastStream = target;
		this.lastSeq = run.seq;
	}

	@Override
	public synchronized Update update(NativeGraph graph) {
		CpuGraph next = (CpuGraph) graph;
		String difference = this.graph.differenceFrom(next);
		if (difference != null) {
			return Update.refused(difference);
		}
		this.graph = next;
		return Update.APPLIED;
	}

	@Override
	public synchronized void destroy() {
		this.destroyed = true;
	}

	synchronized int nodeCount() {
		return this.graph.nodeCount();
	}

}
