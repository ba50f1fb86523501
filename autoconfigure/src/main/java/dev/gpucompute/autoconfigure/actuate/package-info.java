/**
 * Actuator support: the {@code gpu} endpoint, health contributor and info contributor.
 */
package dev.gpucompute.autoconfigure.actuate;
