package dev.gpucompute.autoconfigure;

/**
 * Graphs: {@code gpu.graphs.*} (the runtime's {@code dev.gpucompute.graph}, docs/runtime.md "Graphs").
 * Bound as part of {@link GpuProperties}.
 */
public class GpuGraphProperties {

	/**
	 * Most graphs a graph cache keeps when the code that makes it does not say
	 * (GpuGraphs.cache(name)): one graph per key, such as a batch size; past it, capturing a new key
	 * closes the graph used least recently. At least 1.
	 */
	private int cacheSize = 16; // GraphSettings.DEFAULT_CACHE_SIZE, written out for the configuration metadata

	public int getCacheSize() {
		return this.cacheSize;
	}

	public void setCacheSize(int cacheSize) {
		this.cacheSize = cacheSize;
	}

}
