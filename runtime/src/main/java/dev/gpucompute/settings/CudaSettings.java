package dev.gpucompute.settings;

/**
 * The CUDA backend's device memory: defaults and checks, held here once. Immutable; checked when
 * made.
 *
 * @param memoryPoolReleaseThreshold bytes the stream-ordered allocator keeps cached between frees,
 * instead of returning them to the driver; not negative
 */
public record CudaSettings(long memoryPoolReleaseThreshold) {

	/** The runtime's defaults: the allocator keeps everything it freed for reuse. */
	public static final CudaSettings DEFAULTS = new CudaSettings(Long.MAX_VALUE);

	/**
	 * Checks the value.
	 * @throws InvalidSettingException when it is negative
	 */
	public CudaSettings {
		Limits.notNegative(memoryPoolReleaseThreshold, "memoryPoolReleaseThreshold");
	}

}
