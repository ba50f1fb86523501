package dev.gpucompute.internal.core;

import dev.gpucompute.GpuContext;
import dev.gpucompute.LeakTracker;
import org.jspecify.annotations.Nullable;

/**
 * What {@link LeakTracker} needs of a lease, buffer or event: the cleaner-side state of each, which
 * never refers to the object the caller holds (so tracking keeps nothing reachable that the leak
 * safety net should see dropped).
 */
public interface Tracked {

	GpuContext context();

	LeakTracker.Kind kind();

	/** Whether the caller has not closed it yet. */
	boolean isOpen();

	/** What it is, for the report: "Device buffer of 64 bytes on pool-2". */
	String describe();

	/** Where it was acquired ({@link Leaks#site}), or {@code null} when that was not recorded. */
	@Nullable Throwable acquisitionSite();

}
