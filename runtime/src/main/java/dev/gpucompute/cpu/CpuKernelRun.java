package dev.gpucompute.cpu;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.gpucompute.CpuKernel;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.LaunchConfig;
import org.jspecify.annotations.Nullable;

/**
 * One kernel launch: every block of its grid, with the arguments copied at enqueue time. It is the
 * launch's operation on its stream (one object per launch, as before graphs existed), and, recorded by
 * a capture instead, the work of a graph node that each replay runs again: it keeps no state between
 * runs.
 */
final class CpuKernelRun extends CpuStream.Op {

	final String kernel;

	private final CpuKernel implementation;

	private final LaunchConfig config;

	private final CpuArgs args;

	CpuKernelRun(String kernel, CpuKernel implementation, LaunchConfig config, CpuArgs args) {
		this.kernel = kernel;
		this.implementation = implementation;
		this.config = config;
		this.args = args;
	}

	/** As its stream's operation: the blocks, on one worker when one worker runs them alone, else spread. */
	@Override
	boolean start(CpuStream stream) {
		int tasks = tasks(stream.backend.threads());
		if (tasks == 1) {
			stream.backend.execute(stream.priority, () -> stream.finish(this, runHere(stream.name())));
			return false;
		}
		spread(stream.backend, stream.priority, tasks, stream.name(), (failure) -> stream.finish(this, failure));
		return false;
	}

	@Override
	CpuGraph.Node node() {
		return new CpuGraph.KernelNode(this);
	}

	/** Blocks in the grid. */
	long blocks() {
		return this.config.grid().volume();
	}

	/** How many worker tasks the grid is spread over: one when a single worker runs it alone. */
	int tasks(int workers) {
		return (int) Math.min(workers, blocks());
	}

	/** Runs every block on the calling thread; returns the failure (naming {@code stream}), or null. */
	@Nullable Throwable runHere(String stream) {
		return runBlocks(newBlock(), 0, blocks(), stream);
	}

	/**
	 * Spreads the blocks over {@code tasks} worker tasks (each takes the next run of blocks until none is
	 * left) and calls {@code done} once, with the first failure or null, when every worker has left the
	 * kernel, also after a failure.
	 * @throws RejectedExecutionException when not even the first task could be handed over (closing);
	 * {@code done} is then never called
	 */
	void spread(CpuDeviceBackend backend, int priority, int tasks, String stream, Consumer<Throwable> done) {
		long blocks = blocks();
		AtomicLong next = new AtomicLong();
		AtomicInteger remaining = new AtomicInteger(tasks);
		AtomicReference<Throwable> failure = new AtomicReference<>();
		long chunk = Math.max(1, blocks / (tasks * 8L));
		for (int t = 0; t < tasks; t++) {
			try {
				backend.execute(priority, () -> {
					CpuBlock block = newBlock();
					long start;
					while (failure.get() == null && (start = next.getAndAdd(chunk)) < blocks) {
						Throwable failed = runBlocks(block, start, Math.min(blocks, start + chunk), stream);
						if (failed != null) {
							failure.compareAndSet(null, failed);
						}
					}
					if (remaining.decrementAndGet() == 0) {
						done.accept(failure.get());
					}
				});
			}
			catch (RejectedExecutionException ex) {
				// Closing: the tasks not handed over count as done, so the work still ends once.
				failure.compareAndSet(null, ex);
				if (t == 0) {
					throw ex;
				}
				if (remaining.addAndGet(-(tasks - t)) == 0) {
					done.accept(failure.get());
				}
				return;
			}
		}
	}

	private CpuBlock newBlock() {
		return new CpuBlock(this.config.grid(), this.config.block(), this.config.sharedMemoryBytes());
	}

	/** Runs blocks {@code start} (inclusive) to {@code end}; returns the failure, or null. */
	private @Nullable Throwable runBlocks(CpuBlock block, long start, long end, String stream) {
		try {
			block.moveTo(start);
			this.implementation.run(block, this.args);
			for (long b = start + 1; b < end; b++) {
				block.advance();
				this.implementation.run(block, this.args);
			}
			return null;
		}
		catch (Throwable ex) {
			return new KernelLaunchException(this.kernel, stream, "the CPU implementation threw " + ex, ex);
		}
	}

	@Override
	public String toString() {
		return "kernel '" + this.kernel + "' " + this.config;
	}

}
