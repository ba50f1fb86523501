package dev.gpucompute.sample.search;

/**
 * One search result.
 *
 * @param id the vector's id
 * @param score its cosine similarity or dot product with the query; higher is closer
 */
public record Hit(String id, float score) {
}
