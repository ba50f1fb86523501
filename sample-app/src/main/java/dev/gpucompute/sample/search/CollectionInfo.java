package dev.gpucompute.sample.search;

import java.util.List;

/**
 * What {@code GET /collections} reports about a collection.
 *
 * @param name the collection's name
 * @param dimension the number of float32 values per vector
 * @param metric {@code cosine} or {@code dot}
 * @param size the number of vectors stored
 * @param placements where the vectors are: one entry per shard, in slot order (one entry on a
 * single device; none while the collection is empty)
 */
public record CollectionInfo(String name, int dimension, Metric metric, int size, List<Placement> placements) {

	/**
	 * One shard of a collection.
	 *
	 * @param device the device's ordinal
	 * @param vectors the vectors it holds
	 */
	public record Placement(int device, int vectors) {
	}

}
