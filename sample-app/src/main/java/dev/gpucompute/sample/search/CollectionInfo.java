package dev.gpucompute.sample.search;

/**
 * What {@code GET /collections} reports about a collection.
 *
 * @param name the collection's name
 * @param dimension the number of float32 values per vector
 * @param metric {@code cosine} or {@code dot}
 * @param size the number of vectors stored
 */
public record CollectionInfo(String name, int dimension, Metric metric, int size) {
}
