package dev.gpucompute;

import java.time.Duration;
import java.util.List;

/**
 * A stream lease held now, as {@link StreamPool#leases()} reports it: which stream, for how long,
 * by which thread and, with leak detection on, where it was acquired.
 *
 * @param stream the leased stream's name
 * @param priority its priority
 * @param held how long it has been leased
 * @param thread the name of the thread that acquired it
 * @param site the stack where it was acquired, innermost frame first, starting at the caller of
 * the pool; empty when leak detection is off (no stack is captured then)
 */
public record LeaseInfo(String stream, StreamPriority priority, Duration held, String thread,
		List<StackTraceElement> site) {
}
