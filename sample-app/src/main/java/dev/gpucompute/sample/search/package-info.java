/**
 * Collections of vectors in device memory and their exact k-nearest-neighbour search: the kernels
 * and their CPU twins ({@code KnnKernels}), the device side ({@code KnnEngine}: storage writes and
 * search), sharding over devices, the batcher that groups concurrent searches, and the collections'
 * life cycle (create, upsert, load at start-up, delete).
 */
@NullMarked
package dev.gpucompute.sample.search;

import org.jspecify.annotations.NullMarked;
