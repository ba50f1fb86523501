package dev.gpucompute.cpu;

import java.util.concurrent.CompletableFuture;

import dev.gpucompute.GpuException;
import dev.gpucompute.spi.NativeEvent;
import dev.gpucompute.spi.NativeStream;

/**
 * A completion marker: recording captures the stream's queue end at that moment. An event never
 * recorded is complete, as in CUDA.
 */
final class CpuEvent implements NativeEvent {

	private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

	private final boolean timing;

	private volatile CompletableFuture<Void> marker = DONE;

	/** When the work captured by the latest record completed; only for timing events. */
	private volatile Stamp stamp;

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
			this.marker = cpu.mark(next);
		}
		else {
			this.marker = cpu.mark();
		}
	}

	CompletableFuture<Void> marker() {
		return this.marker;
	}

	@Override
	public void synchronize() {
		this.marker.join();
	}

	@Override
	public boolean query() {
		return this.marker.isDone();
	}

	@Override
	public float elapsedMillisSince(NativeEvent start) {
		CpuEvent begin = (CpuEvent) start;
		Stamp from = begin.stamp;
		Stamp to = this.stamp;
		if (from == null || to == null) {
			throw new GpuException("Timing event was never recorded");
		}
		begin.synchronize();
		synchronize();
		return (to.at - from.at) / 1_000_000f;
	}

	/** nanoTime at which the work captured by the latest record completed, or -1 (for tests). */
	long completedAtNanos() {
		Stamp current = this.stamp;
		return (current != null) ? current.at : -1;
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
		this.marker = DONE;
		this.stamp = null;
	}

}
