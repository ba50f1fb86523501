/**
 * Micrometer binding of gpu-compute: the meters of docs/observability.md, "Meters" ({@link
 * dev.gpucompute.autoconfigure.metrics.GpuMetrics}, their names in {@link
 * dev.gpucompute.autoconfigure.metrics.GpuMeterNames}), the listener that feeds them ({@link
 * dev.gpucompute.autoconfigure.metrics.MicrometerGpuListener}) and an observation around kernel
 * launches ({@link dev.gpucompute.autoconfigure.metrics.ObservedGpuLauncher}).
 */
@NullMarked
package dev.gpucompute.autoconfigure.metrics;

import org.jspecify.annotations.NullMarked;
