package dev.gpucompute.settings;

/**
 * Graph caches ({@code gpu.graphs.*} in the Spring Boot starter): defaults and checks, held here once.
 * Immutable; checked when made.
 *
 * @param cacheSize graphs a cache keeps when the code that makes it does not say how many (one graph
 * per key, such as a batch size; past it, capturing a new key closes the graph used least recently)
 */
public record GraphSettings(int cacheSize) {

	/** Graphs a cache keeps unless set. */
	public static final int DEFAULT_CACHE_SIZE = 16;

	/** The smallest cache: one graph. */
	public static final int MIN_CACHE_SIZE = 1;

	/** The runtime's defaults: caches of 16 graphs. */
	public static final GraphSettings DEFAULTS = new GraphSettings(DEFAULT_CACHE_SIZE);

	/**
	 * Checks the value.
	 * @throws InvalidSettingException when the cache would hold no graph
	 */
	public GraphSettings {
		Limits.atLeast(cacheSize, MIN_CACHE_SIZE, "", "cacheSize");
	}

}
