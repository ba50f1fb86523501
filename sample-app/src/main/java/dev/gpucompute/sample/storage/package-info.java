/**
 * What keeps collections across restarts: each collection's append-only write-ahead log (record
 * format, writer, group commit, replay at start-up) and snapshot files, and the storage failures
 * that stop writes.
 */
@NullMarked
package dev.gpucompute.sample.storage;

import org.jspecify.annotations.NullMarked;
