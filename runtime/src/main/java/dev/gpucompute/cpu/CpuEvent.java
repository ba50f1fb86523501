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

	/** nanoTime at which the captured work completed; -1 until then. */
	private volatile long completedAt = -1;

	CpuEvent(boolean timing) {
		this.timing = timing;
	}

	@Override
	public boolean timing() {
		return this.timing;
	}

	@Override
	public void record(NativeStream stream) {
		CompletableFuture<Void> captured = ((CpuStream) stream).mark();
		this.completedAt = -1;
		this.marker = captured;
		if (this.timing) {
			captured.thenRun(() -> {
				if (this.marker == captured) {
					this.completedAt = System.nanoTime();
				}
			});
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
		begin.synchronize();
		synchronize();
		long from = waitStamp(begin);
		long to = waitStamp(this);
		return (to - from) / 1_000_000f;
	}

	private static long waitStamp(CpuEvent event) {
		// The stamp is written by the completion callback, which may run a moment after join returns.
		long stamp;
		while ((stamp = event.completedAt) < 0) {
			if (event.marker == DONE) {
				throw new GpuException("Timing event was never recorded");
			}
			Thread.onSpinWait();
		}
		return stamp;
	}

	@Override
	public void destroy() {
		this.marker = DONE;
	}

}
