/**
 * The context room (not API): {@code ContextImpl}, the {@code GpuContext} facade over the rooms it
 * is given, the assembly that builds those rooms in order, {@code DevicesImpl} ({@code GpuDevices}),
 * and {@code Engine}, whose public static methods are the entry points the API finds by name.
 */
@NullMarked
package dev.gpucompute.internal.context;

import org.jspecify.annotations.NullMarked;
