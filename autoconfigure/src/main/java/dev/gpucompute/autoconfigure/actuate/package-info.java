/**
 * Actuator support: the {@code gpu} endpoint, health contributor and info contributor.
 */
@NullMarked
package dev.gpucompute.autoconfigure.actuate;

import org.jspecify.annotations.NullMarked;
