/**
 * The HTTP API of the sample: the collections controller, request bodies and their checks, the
 * binary answer format for hits, and RFC 9457 problem details for its own failures and the GPU's.
 */
@NullMarked
package dev.gpucompute.sample.web;

import org.jspecify.annotations.NullMarked;
