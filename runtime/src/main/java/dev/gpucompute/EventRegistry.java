package dev.gpucompute;



/**
 * Creates, recycles and tracks the events of one context. Closed events go back to a free list and
 * are handed out again, since creating a backend event costs far more than reusing one; every event
 * is destroyed when the context closes. {@link #stats()} tells how many are in use, which is how
 * tests and operators spot leaks.
 *
 * <p>Thread-safe. Events returned by {@link #create()} and {@link #createTiming()} are owned by the
 * caller, who closes them (try-with-resources); an event never closed is reported by the leak
 * cleaner and recycled.
 */
public interface EventRegistry {

	/** A new event without timing, for ordering. The caller closes it. */
	GpuEvent create();

	/** A new event with timing, for {@link GpuEvent#elapsedSince(GpuEvent)}. The caller closes it. */
	GpuEvent createTiming();

	/**
	 * Events handed out by {@link #create()} / {@link #createTiming()} and not yet closed: the figure
	 * that shows leaks. The runtime's own events (launch timing, fork/join) are counted apart, in
	 * {@link EventStats#internal()}.
	 */
	int inUse();

	/** Events not yet destroyed: in use plus cached for reuse. Zero after the context closed. */
	int live();

	/** Its events now (live, in use, the runtime's own, cached for reuse) and created and destroyed so far: a snapshot. */
	EventStats stats();

	/**
	 * A snapshot of the registry.
	 *
	 * @param live events not yet destroyed (in use + internal + cached)
	 * @param inUse events handed out to callers and not yet closed
	 * @param internal events the runtime holds for its own work (timed launches, joins)
	 * @param cached closed events kept for reuse
	 * @param created backend events created since open
	 * @param destroyed backend events destroyed since open
	 */
	public record EventStats(int live, int inUse, int internal, int cached, long created, long destroyed) {
	}

}
