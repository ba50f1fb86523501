package dev.gpucompute.graph;

import dev.gpucompute.GpuStream;

/**
 * A capture in progress ({@link GpuGraphs#beginCapture}): until it ends, the work the calling thread
 * issues on its stream is recorded into a graph instead of run. Use it with try-with-resources:
 *
 * <pre>{@code
 * try (StreamLease lease = context.streams().acquire();
 *      GraphCapture capture = graphs.beginCapture(lease.stream())) {
 *     for (int step = 0; step < 100; step++) {
 *         launcher.launch(stencil, config, n, a, b);   // recorded, not run
 *         launcher.launch(stencil, config, n, b, a);
 *     }
 *     graph = capture.end();                           // the caller owns the graph
 * }
 * graph.launch(stream);                                // 200 launches, one call
 * }</pre>
 *
 * <p><b>What it records.</b> Kernel launches (with their arguments as given), {@code fill},
 * {@code copyFrom} between device buffers, copies between a device buffer and a {@code HostBuffer},
 * event records and stream waits. The capture's stream is the thread's current stream until the
 * capture closes, so launches and copies that name no stream go to it. A pooled stream that waits
 * for an event recorded in the capture (or for the capture's stream: {@code other.waitFor(stream)})
 * joins it, and its work is recorded too; so does a stream-parallel group ({@code launcher.parallel}),
 * whose branches become parallel branches of the graph. Every stream that joined must be joined back
 * ({@code stream.waitFor(other)}) before {@link #end()}; a group joins its branches itself.
 *
 * <p><b>What it refuses</b> ({@link GraphCaptureException}, naming the operation and what to do
 * instead; the same on every backend): a host-side wait (synchronising a stream, the context or an
 * event, {@code isIdle}, {@code isComplete}, {@code completion()}, waiting for a future); copies from
 * or into Java arrays and {@code ByteBuffer}s (they are staged on the host in steps: copy through a
 * {@code HostBuffer}); allocations and frees (allocate before the capture, close after it); kernel
 * loads; work on a stream that is not part of the capture; waits for work outside the capture;
 * capturing on a default stream, or a default stream joining the capture; a capture inside a
 * capture. A refused operation of the capturing thread ends and discards the capture at once: the
 * stream and its lease are usable afterwards, and {@link #end()} throws with the refusal as its
 * cause. Another thread's first use of a buffer owned by a stream in the capture is refused too,
 * and leaves the capture alone: ordering its stream after the owner would make it join.
 *
 * <p>Only the thread that began the capture may use it and must end it; other threads' work on other
 * streams goes on undisturbed, and a virtual thread may park during the capture (CUDA captures in its
 * relaxed mode, which lets any carrier end it; the runtime refuses what a capture forbids itself). A
 * capture left open when the context closes is ended and discarded by the close. A buffer's first
 * use on another stream is ordered when the graph is replayed, not in the graph, so buffers allocated
 * on any stream may be used.
 */
public interface GraphCapture extends AutoCloseable {

	/** The stream being captured. */
	GpuStream stream();

	/** The name the graph will have. */
	String name();

	/** Whether it still records: not ended, closed or failed. */
	boolean isCapturing();

	/**
	 * Ends the capture and instantiates what it recorded as a new graph, which the caller owns.
	 * @throws GraphCaptureException when the capture failed earlier (kind {@code ENDED}, the refusal
	 * as cause), was ended already, or a stream that joined it was not joined back (kind
	 * {@code UNJOINED}); the capture is over and discarded either way
	 */
	GpuGraph end();

	/**
	 * Ends the capture and applies it to {@code graph}, a graph of the same context captured before:
	 * in place when the backend accepts the new capture as the same shape (the same kernels and copies
	 * in the same order, other scalars and buffers), else instantiated anew, replacing the old
	 * instantiation inside {@code graph} (which stays the object the caller holds). Replays already
	 * enqueued run as they were; replays enqueued afterwards run the new capture. Which of the two
	 * happened is returned, counted ({@code gpu.graph.updates}) and logged at DEBUG.
	 * @throws GraphCaptureException as {@link #end()} does; {@code graph} is then unchanged
	 * @throws dev.gpucompute.GpuException when {@code graph} is closed or belongs to another context
	 */
	GraphUpdate endAndUpdate(GpuGraph graph);

	/**
	 * Ends the capture, discarding what it recorded unless {@link #end()} or
	 * {@link #endAndUpdate(GpuGraph)} was called, and restores the thread's previous current stream.
	 * Idempotent; never throws for the capture's state.
	 */
	@Override
	void close();

}
