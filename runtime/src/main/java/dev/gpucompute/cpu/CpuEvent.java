package dev.gpucompute.cpu;

import dev.gpucompute.GpuException;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;
import org.jspecify.annotations.Nullable;

/**
 * A completion marker: recording captures a point of a stream's queue. An event never recorded is
 * complete, as in CUDA.
 */
final class CpuEvent implements NativeEvent {

	private final boolean timing;

	/** The point captured by the latest record, or {@code null}. */
	private volatile CpuStream.@Nullable Mark mark;

	/** When the work captured by the latest record completed; only for timing events. */
	private volatile @Nullable Stamp stamp;

	CpuEvent(boolean timing) {
		this.timing = timing;
	}

	@Override
	public boolean timing() {
		return this.timing;
	}

	@Override
	public void record(NativeStream stream) {
		CpuStream cpu = (CpuStream) stream;
		if (this.timing) {
			// Stamped in queue order: a stamp taken by a callback could run after the next operation.
			Stamp next = new Stamp();
			this.stamp = next;
			this.mark = cpu.mark(next);
		}
		else {
			this.mark = cpu.mark();
		}
	}

	CpuStream.@Nullable Mark mark() {
		return this.mark;
	}

	@Override
	public void synchronize() {
		CpuStream.Mark current = this.mark;
		if (current == null) {
			return;
		}
		if (current.captured() != null) {
			current.reached(); // refuses: a point of a graph is never reached as such
		}
		GpuException failure = current.stream().await(current.seq(), true, current.from(), true, 0);
		if (failure != null) {
			throw failure;
		}
	}

	/** Waits for the captured work without taking its failures. */
	private void awaitQuietly() {
		CpuStream.Mark current = this.mark;
		if (current != null) {
			current.stream().await(current.seq(), false, 0, false, 0);
		}
	}

	@Override
	public boolean query() {
		CpuStream.Mark current = this.mark;
		return current == null || current.reached();
	}

	@Override
	public float elapsedMillisSince(NativeEvent start) {
		CpuEvent begin = (CpuEvent) start;
		Stamp from = begin.stamp;
		Stamp to = this.stamp;
		if (from == null || to == null) {
			throw new GpuException("Timing event was never recorded");
		}
		begin.awaitQuietly();
		awaitQuietly();
		return (to.at - from.at) / 1_000_000f;
	}

	/** The moment a timing event's captured work completed. */
	private static final class Stamp implements Runnable {

		private volatile long at = -1;

		@Override
		public void run() {
			this.at = System.nanoTime();
		}

	}

	@Override
	public void destroy() {
		this.mark = null;
		this.stamp = null;
	}

}
