/**
 * The launch room (not API): {@code Launcher}, the implementation of {@code GpuLauncher}: kernels
 * loaded once per context ({@code KernelLoads}, {@code KernelHandle}), the launch path (argument and
 * configuration checks, buffer ordering, sampled device timing), current-stream scopes and
 * stream-parallel groups.
 */
@NullMarked
package dev.gpucompute.internal.launch;

import org.jspecify.annotations.NullMarked;
