package dev.gpucompute.spi;

/**
 * What a capture recorded ({@link NativeCapture#end()}): a graph of operations and their
 * dependencies, not yet runnable. The context instantiates it, or uses it to update an instantiated
 * graph, and then destroys it; it is used by one thread at a time.
 */
public interface NativeGraph {

	/** The operations in the graph (kernel launches, copies, fills). */
	int nodeCount();

	/**
	 * A runnable copy of this graph; independent of it (this graph may be destroyed afterwards).
	 * @throws dev.gpucompute.GpuException when the backend cannot instantiate it
	 */
	NativeGraphExec instantiate();

	/** Releases the graph. Idempotent. */
	void destroy();

}
