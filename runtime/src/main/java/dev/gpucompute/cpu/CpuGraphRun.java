package dev.gpucompute.cpu;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

import dev.gpucompute.GpuException;
import dev.gpucompute.KernelLaunchException;
import org.jspecify.annotations.Nullable;

/**
 * One replay of a {@link CpuGraph} as a single operation of its stream: it starts when the work
 * before it on the stream has finished, and the stream moves on when every operation of the graph
 * has. Inside, an operation starts when those it waits for have finished: the first ready one runs on
 * the worker that finished its predecessor, other ready ones are handed to other workers (so parallel
 * branches of a stream-parallel group overlap as they did on their streams). A kernel that one worker
 * runs alone runs right there, with no hand-off: that, and the checks the capture made once, is what a
 * replay saves over issuing the operations one by one.
 *
 * <p>Failures follow the stream's rules for the same operations issued one by one: a failed operation
 * does not stop the others; the replay ends with the first failure (the others attached as
 * suppressed, each counted), reported once to whoever waits for the stream.
 */
final class CpuGraphRun extends CpuStream.Op {

	private final CpuGraph graph;

	private final CpuStream stream;

	private final CpuDeviceBackend backend;

	/** Per operation: dependencies not finished yet. Made when the run starts. */
	@SuppressWarnings("NullAway.Init") // set by start() before any operation runs; a graph without any leaves it unset
	private AtomicIntegerArray waiting;

	private final AtomicInteger finished = new AtomicInteger();

	// guarded by this
	private @Nullable Throwable failure;

	CpuGraphRun(CpuGraph graph, CpuStream stream) {
		this.graph = graph;
		this.stream = stream;
		this.backend = stream.backend;
	}

	@Override
	boolean start(CpuStream target) {
		int n = this.graph.nodes.length;
		if (n == 0) {
			return true;
		}
		AtomicIntegerArray counts = new AtomicIntegerArray(n);
		for (int i = 0; i < n; i++) {
			counts.set(i, this.graph.dependencies[i].length);
		}
		this.waiting = counts;
		int[] roots = this.graph.roots;
		// Handed over even when the stream started this on the enqueuing thread: kernels run on workers.
		for (int root : roots) {
			execute(root);
		}
		return false;
	}

	/** Runs operation {@code index} on a worker, and what becomes ready after it. */
	private void execute(int index) {
		this.backend.execute(this.stream.priority, () -> runFrom(index));
	}

	/** Runs operations on this worker, starting with {@code index}, while one of them becomes ready here. */
	private void runFrom(int index) {
		int next = index;
		while (next >= 0) {
			CpuGraph.Node node = this.graph.nodes[next];
			if (node instanceof CpuGraph.KernelNode kernel) {
				int tasks = kernel.work.tasks(this.backend.threads());
				if (tasks > 1) {
					int spread = next;
					try {
						kernel.work.spread(this.backend, this.stream.priority, tasks, this.stream.name(),
								(failed) -> runFrom(finished(spread, failed)));
					}
					catch (RejectedExecutionException ex) {
						next = finished(spread, ex);
						continue;
					}
					return;
				}
				next = finished(next, kernel.work.runHere(this.stream.name()));
			}
			else {
				Throwable failed = null;
				try {
					((CpuGraph.TaskNode) node).body.run();
				}
				catch (Throwable ex) {
					failed = ex;
				}
				next = finished(next, failed);
			}
		}
	}

	/**
	 * Books operation {@code index} as finished: hands the operations that became ready to other
	 * workers but the first, which it returns for this worker to run ({@code -1}: none); ends the
	 * replay after the last operation.
	 */
	private int finished(int index, @Nullable Throwable failed) {
		if (failed != null) {
			fail(failed);
		}
		int next = -1;
		for (int successor : this.graph.successors[index]) {
			if (this.waiting.decrementAndGet(successor) == 0) {
				if (next < 0) {
					next = successor;
				}
				else {
					try {
						execute(successor);
					}
					catch (RejectedExecutionException ex) {
						// Closing: the stream was abandoned, and nobody waits for this replay any more.
						return -1;
					}
				}
			}
		}
		if (this.finished.incrementAndGet() == this.graph.nodes.length) {
			Throwable first;
			synchronized (this) {
				first = this.failure;
			}
			this.stream.finish(this, first);
		}
		return next;
	}

	private void fail(Throwable failed) {
		Throwable wrapped = (failed instanceof GpuException) ? failed
				: new GpuException("Operation of a graph replayed on stream " + this.stream.name() + " failed: " + failed,
						failed);
		synchronized (this) {
			if (this.failure == null) {
				this.failure = wrapped;
				return; // counted by the stream when the replay ends
			}
			this.failure.addSuppressed(wrapped);
		}
		if (wrapped instanceof KernelLaunchException kernel) {
			this.backend.kernelFailed(kernel.kernelName(), kernel);
		}
	}

}
