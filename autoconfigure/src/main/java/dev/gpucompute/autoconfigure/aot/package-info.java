/**
 * Ahead-of-time processing support: the runtime hints a native image of a gpu-compute application
 * needs.
 */
package dev.gpucompute.autoconfigure.aot;
