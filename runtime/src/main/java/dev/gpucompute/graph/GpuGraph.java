package dev.gpucompute.graph;

import java.util.concurrent.CompletableFuture;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuStream;

/**
 * Work captured once and replayed many times with one call: the kernel launches, fills and copies
 * that a {@link GraphCapture} recorded, with their order and the dependencies between the streams
 * that took part, instantiated for the device (a CUDA graph; on the CPU backend, the recorded
 * operations).
 *
 * <p><b>Replays.</b> {@link #launch(GpuStream)} enqueues the whole graph on any stream of its
 * context, as one launch: it starts after the work enqueued there before it, later work on that
 * stream starts after it, and the host does not block. Replays of one graph run one at a time, in the
 * order they were enqueued, whatever their streams. {@link #replay(GpuStream)} does the same and
 * returns a future, like a copy's. A failure inside a replay surfaces like a kernel failure on that
 * stream (at its next synchronisation, completion or event wait), naming the kernel.
 *
 * <p><b>Buffers keep their addresses.</b> A replay reads and writes the very device buffers, host
 * buffers and offsets that were used while capturing, with the scalar arguments given then. Their
 * contents may change between replays (upload new input into the same buffer, replay, download the
 * result): that is how a graph takes new data. Keep every buffer the graph uses open while the graph
 * lives: a replay that finds one of them closed is refused ({@code GpuException} naming it). For new
 * scalars or other buffers, capture again and update the graph in place
 * ({@link GraphCapture#endAndUpdate(GpuGraph)}).
 *
 * <p><b>Ownership.</b> The code that captured it closes it (try-with-resources); closing twice is
 * harmless, and replays already enqueued still run. A replay after close raises {@code GpuException}.
 * Closing the context destroys its live graphs after the drain, as it does streams; a graph dropped
 * without close is released by a cleaner, logged as a leak with the site that captured it when leak
 * detection is on, and shown by {@code LeakTracker} while one is open.
 *
 * <p>Thread-safe: any thread may replay it, including several at once (the replays are ordered).
 */
public interface GpuGraph extends AutoCloseable {

	/** The name it was captured under (logs, metrics, {@code /actuator/gpu}). */
	String name();

	/** The context it belongs to. */
	GpuContext context();

	/** Operations in the graph: kernel launches, fills and copies. */
	int nodeCount();

	/** Enqueues a replay on the calling thread's current stream ({@code launcher.currentStream()}). */
	void launch();

	/**
	 * Enqueues a replay of the whole graph on {@code stream}, a stream of this graph's context (not one
	 * being captured). Costs the host about one kernel launch, whatever the graph holds.
	 * @throws dev.gpucompute.GpuException when the graph, the stream or a buffer the graph uses was
	 * closed
	 */
	void launch(GpuStream stream);

	/**
	 * {@link #launch(GpuStream)}, returning a future that completes when this replay (and the work
	 * before it on {@code stream}) is done: exceptionally with the failure of an operation inside it,
	 * or with {@code ContextClosedException} when the context closed and abandoned it. It always
	 * completes; dependent stages run as for a copy's future.
	 */
	CompletableFuture<Void> replay(GpuStream stream);

	/** A snapshot of what it holds and how it was used. */
	GraphInfo info();

	/** Whether it was closed (by its holder, a cache, its context, or the leak cleaner). */
	boolean isClosed();

	/** Releases the graph. Idempotent; replays already enqueued still run. */
	@Override
	void close();

}
