/**
 * The sample embedding-search service: the Spring Boot application, its properties
 * ({@code sample.*}), the wiring of the search beans and the health of its storage. What it does is
 * in the subpackages: {@code search} (collections in device memory, the kernels, k-nearest-neighbour
 * search), {@code storage} (write-ahead logs and snapshots on disk), {@code web} (the HTTP API) and
 * {@code demo} (a steady load for the dashboard).
 */
@NullMarked
package dev.gpucompute.sample;

import org.jspecify.annotations.NullMarked;
