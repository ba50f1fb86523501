/**
 * The backend SPI: what a device backend (CPU, CUDA, later HIP) implements. Everything above it
 * (the stream pool, the event registry, the launcher, current-stream scoping, stream-parallel
 * groups, leak detection, statistics) is shared by all backends and lives in
 * {@code dev.gpucompute}.
 *
 * <p>Contract for implementations: handles are only ever used by the {@code GpuContext} that
 * opened the backend; the context guarantees that no handle is used after it was destroyed and
 * that arguments were validated (launch dimensions against {@code DeviceInfo}, argument types
 * against the kernel's declared parameters). Methods may be called from any thread concurrently
 * unless stated otherwise. Failures are reported as {@code GpuException} subtypes.
 */
@NullMarked
package dev.gpucompute.spi;

import org.jspecify.annotations.NullMarked;
