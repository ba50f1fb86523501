package dev.gpucompute.cuda;

import org.jspecify.annotations.Nullable;

/**
 * Whether device memory comes from the stream-ordered allocator ({@code cuMemAllocAsync}) or the
 * synchronous one ({@code cuMemAlloc}), decided once when the backend opens: the device must report
 * {@code CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED}, and a trial allocation and free of 256 bytes
 * must succeed (some virtualised and MIG set-ups report support and then answer
 * {@code CUDA_ERROR_NOT_SUPPORTED}). Pure decision, unit-tested without a driver.
 *
 * @param streamOrdered whether to use {@code cuMemAllocAsync}/{@code cuMemFreeAsync}
 * @param reason one line for the log: why this allocator
 */
record AllocatorChoice(boolean streamOrdered, String reason) {

	/**
	 * @param poolsSupported the device attribute
	 * @param trialResult the {@code CUresult} of the trial {@code cuMemAllocAsync} + free + synchronize,
	 * or {@code null} when no trial was made (pools unsupported)
	 */
	static AllocatorChoice decide(boolean poolsSupported, @Nullable Integer trialResult) {
		if (!poolsSupported) {
			return new AllocatorChoice(false, "the device does not support memory pools "
					+ "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0): allocating with cuMemAlloc");
		}
		if (trialResult == null || trialResult != CudaErrors.SUCCESS) {
			return new AllocatorChoice(false, "a trial cuMemAllocAsync failed ("
					+ ((trialResult != null) ? CudaErrors.describe(trialResult, false) : "not made")
					+ ") although the device reports memory pools: allocating with cuMemAlloc");
		}
		return new AllocatorChoice(true, "stream-ordered (cuMemAllocAsync)");
	}

}
