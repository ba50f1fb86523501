package dev.gpucompute.settings;

/**
 * Whether launches are timed in device time with a pair of timing events
 * ({@code gpu.metrics.kernel-timing}).
 */
public enum KernelTiming {

	/** No launch is timed. */
	OFF,

	/**
	 * One launch in {@value #SAMPLE_EVERY} per kernel is timed, while fewer than
	 * {@value #MAX_SAMPLES_IN_FLIGHT} timed launches of the context wait to be read (device times
	 * are read every 20 ms). Beyond that, launches go untimed: a deep queue or a very high launch
	 * rate then costs a bounded number of events, all of them recycled, instead of creating and
	 * destroying events in proportion to the backlog.
	 */
	SAMPLED,

	/** Every launch is timed (two extra events per launch, however many launches are in flight). */
	ALL;

	/** Sampling period of {@link #SAMPLED}. */
	public static final int SAMPLE_EVERY = 64;

	/** Most timed launches of one context whose device time is not read yet, with {@link #SAMPLED}. */
	public static final int MAX_SAMPLES_IN_FLIGHT = 128;

}
