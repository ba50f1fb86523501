/**
 * How a context is configured: one immutable record per group of settings ({@link
 * dev.gpucompute.settings.StreamSettings}, {@link dev.gpucompute.settings.CopySettings}, {@link
 * dev.gpucompute.settings.CpuSettings}, {@link dev.gpucompute.settings.KernelSettings}, {@link
 * dev.gpucompute.settings.ShutdownSettings}, {@link dev.gpucompute.settings.MetricsSettings}, {@link
 * dev.gpucompute.settings.CudaSettings}), each holding its defaults ({@code DEFAULTS}), its limits
 * (constants) and its checks, once. {@code GpuContextBuilder}'s setters and the Spring Boot
 * starter's {@code gpu.*} properties both map onto these records, so a value is checked by the same
 * rule, with the same message, however it is set; {@link dev.gpucompute.settings.Limits} is that rule
 * for single values and {@link dev.gpucompute.settings.InvalidSettingException} says which setting
 * broke which limit. The enums of settings ({@link dev.gpucompute.settings.DefaultStreamMode}, {@link
 * dev.gpucompute.settings.KernelTiming}) live here too.
 *
 * <p>Most applications never name these types: {@code GpuContext.builder()} and the starter's
 * properties are enough. This package depends on nothing else of gpu-compute.
 */
@NullMarked
package dev.gpucompute.settings;

import org.jspecify.annotations.NullMarked;
