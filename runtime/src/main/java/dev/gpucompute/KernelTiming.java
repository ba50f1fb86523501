package dev.gpucompute;

/**
 * Whether launches are timed in device time with a pair of timing events
 * ({@code gpu.metrics.kernel-timing}).
 */
public enum KernelTiming {

	/** No launch is timed. */
	OFF,

	/** One launch in {@value #SAMPLE_EVERY} per kernel is timed. */
	SAMPLED,

	/** Every launch is timed (two extra events per launch). */
	ALL;

	/** Sampling period of {@link #SAMPLED}. */
	public static final int SAMPLE_EVERY = 64;

}
