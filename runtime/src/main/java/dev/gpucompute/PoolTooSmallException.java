package dev.gpucompute;

import java.util.Locale;

/**
 * A request for more pooled streams at once than the pool can ever lease together: more than its
 * maximum size ({@link GpuContextBuilder#maxSize(int)}, {@code gpu.streams.max-size} in Spring), or
 * more than the limit of the request's priority ({@link GpuContextBuilder#priorityLimit(StreamPriority, int)},
 * {@code gpu.streams.priority-limits.normal} / {@code .high}). Raised by {@link StreamPool#acquireAll}
 * and {@link GpuLauncher#parallel(java.util.List)} before anything is leased, since waiting could never
 * satisfy the request. Also raised, by {@link StreamPool#acquire} too, when the request fits the pool
 * but not beside the pooled stream the calling thread works on in a scope ({@link #heldByCaller()}):
 * the thread would wait for itself until the acquire timeout.
 *
 * <p>A configuration problem of the application (the pool is too small for the work it was given),
 * not a busy pool: unlike {@link PoolExhaustedException}, retrying does not help; the pool or the
 * limit must grow, or the work must ask for fewer streams at once. A count below 1 is a plain bad
 * argument ({@link IllegalArgumentException}).
 */
public class PoolTooSmallException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final int requested;

	private final int maxLeasable;

	private final StreamPriority priority;

	private final boolean priorityLimited;

	private final int heldByCaller;

	/**
	 * @param requested the streams asked for at once
	 * @param maxLeasable the most streams of {@code priority} the pool may lease at once
	 * @param priority the priority asked for
	 * @param priorityLimited whether {@code maxLeasable} is the priority's limit rather than the
	 * pool's maximum size
	 */
	public PoolTooSmallException(int requested, int maxLeasable, StreamPriority priority, boolean priorityLimited) {
		this(requested, maxLeasable, priority, priorityLimited, 0);
	}

	/**
	 * A request that the pool could grant, but not beside the pooled stream the calling thread works on
	 * (its current stream, in a scope): it would wait for that very stream (a batch handler, or a
	 * branch of a group, that leases more while the lease it runs on stays open).
	 * @param requested the streams asked for at once
	 * @param maxLeasable the most streams of {@code priority} the pool may lease at once
	 * @param priority the priority asked for
	 * @param priorityLimited whether {@code maxLeasable} is the priority's limit rather than the
	 * pool's maximum size
	 * @param heldByCaller the pooled streams the calling thread works on that count against {@code maxLeasable}
	 */
	public PoolTooSmallException(int requested, int maxLeasable, StreamPriority priority, boolean priorityLimited,
			int heldByCaller) {
		super(message(requested, maxLeasable, priority, priorityLimited, heldByCaller));
		this.requested = requested;
		this.maxLeasable = maxLeasable;
		this.priority = priority;
		this.priorityLimited = priorityLimited;
		this.heldByCaller = heldByCaller;
	}

	private static String message(int requested, int maxLeasable, StreamPriority priority, boolean priorityLimited,
			int heldByCaller) {
		String bound = priorityLimited
				? "at most " + maxLeasable + " streams of priority " + priority + " may be leased at once (its limit: "
						+ "GpuContextBuilder.priorityLimit, " + property(priority, true) + ")"
				: "the stream pool never holds more than " + maxLeasable + " (its maximum size: GpuContextBuilder.maxSize, "
						+ property(priority, false) + ")";
		if (heldByCaller > 0) {
			return "Cannot lease " + requested + " more stream" + ((requested == 1) ? "" : "s") + " while this thread "
					+ "works on " + ((heldByCaller == 1) ? "a pooled stream" : heldByCaller + " pooled streams")
					+ " of the pool (its current stream): " + bound + ". It would wait for the stream it holds: run "
					+ "the work on the current stream (a batch handler: on its batch's stream), or raise "
					+ property(priority, priorityLimited);
		}
		return "Cannot lease " + requested + " streams at once: " + bound + ". Waiting cannot help: raise "
				+ property(priority, priorityLimited) + " or ask for fewer streams at once (fewer branches in a "
				+ "stream-parallel group)";
	}

	private static String property(StreamPriority priority, boolean priorityLimited) {
		return priorityLimited ? "gpu.streams.priority-limits." + priority.name().toLowerCase(Locale.ROOT)
				: "gpu.streams.max-size";
	}

	/**
	 * The pooled streams the calling thread worked on (its current stream) that counted against
	 * {@link #maxLeasable()}; zero when the request alone exceeds it.
	 */
	public int heldByCaller() {
		return this.heldByCaller;
	}

	/**
	 * What was asked for, in words for a report: {@code "2 streams at once"}, or, when the calling
	 * thread's own streams counted, {@code "1 more stream beside the 1 it works on"}.
	 */
	public String demand() {
		String noun = (this.requested == 1) ? " stream" : " streams";
		return (this.heldByCaller > 0) ? this.requested + " more" + noun + " beside the " + this.heldByCaller + " it works on"
				: this.requested + noun + " at once";
	}

	/** The number of streams asked for at once. */
	public int requested() {
		return this.requested;
	}

	/** The most streams of {@link #priority()} the pool may lease at once. */
	public int maxLeasable() {
		return this.maxLeasable;
	}

	/** The priority of the streams asked for. */
	public StreamPriority priority() {
		return this.priority;
	}

	/** Whether the bound is the priority's limit rather than the pool's maximum size. */
	public boolean isPriorityLimited() {
		return this.priorityLimited;
	}

	/**
	 * The Spring Boot property that sets the bound: {@code gpu.streams.max-size}, or
	 * {@code gpu.streams.priority-limits.normal} / {@code .high}.
	 */
	public String property() {
		return property(this.priority, this.priorityLimited);
	}

}
