/**
 * Micrometer binding of gpu-compute: the meters of docs/observability.md, "Meters" ({@link
 * dev.gpucompute.autoconfigure.metrics.GpuMetrics}), the listener that feeds them ({@link
 * dev.gpucompute.autoconfigure.metrics.MicrometerGpuListener}) and an observation around kernel
 * launches ({@link dev.gpucompute.autoconfigure.metrics.ObservedGpuLauncher}).
 */
package dev.gpucompute.autoconfigure.metrics;
