/**
 * Ahead-of-time processing support: the runtime hints a native image of a gpu-compute application
 * needs.
 */
@NullMarked
package dev.gpucompute.autoconfigure.aot;

import org.jspecify.annotations.NullMarked;
