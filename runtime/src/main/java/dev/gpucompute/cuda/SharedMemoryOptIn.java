package dev.gpucompute.cuda;

import dev.gpucompute.InvalidLaunchConfigException;

/**
 * When a launch must raise a kernel's dynamic shared memory limit first
 * ({@code cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)}), and whether it can.
 * CUDA's per-block limit covers a kernel's static shared memory (its {@code __shared__} arrays,
 * {@code CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES}) and the launch's dynamic shared memory together:
 * without an opt-in a kernel with 16 KiB of static shared memory may take 32 KiB dynamically, not 48,
 * and with one, at most the device's opt-in limit less its static part. Pure arithmetic, tested
 * without a device.
 */
final class SharedMemoryOptIn {

	/** Dynamic plus static shared memory a block may use without an opt-in, on every GPU since Kepler. */
	static final int DEFAULT_PER_BLOCK = 48 * 1024;

	private SharedMemoryOptIn() {
	}

	/**
	 * The dynamic limit a kernel starts with, when the driver did not say
	 * ({@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES} unreadable).
	 */
	static int defaultDynamicLimit(int staticBytes) {
		return Math.max(0, DEFAULT_PER_BLOCK - staticBytes);
	}

	/**
	 * The dynamic shared memory to opt a kernel in to before a launch that asks for {@code dynamic}
	 * bytes, or {@code -1} when its current limit already covers it.
	 * @param kernel the kernel's name, for the message
	 * @param dynamic the launch's dynamic shared memory
	 * @param staticBytes the kernel's static shared memory
	 * @param currentLimit the dynamic shared memory the kernel may use now
	 * @param devicePerBlock the device's most shared memory per block with an opt-in (static and dynamic)
	 * @throws InvalidLaunchConfigException when static and dynamic together exceed {@code devicePerBlock}
	 */
	static int target(String kernel, int dynamic, int staticBytes, int currentLimit, int devicePerBlock) {
		if (dynamic <= currentLimit) {
			return -1;
		}
		long total = (long) staticBytes + dynamic;
		if (total > devicePerBlock) {
			throw new InvalidLaunchConfigException("Kernel '" + kernel + "' needs " + total + " bytes of shared memory per "
					+ "block: " + staticBytes + " static (its __shared__ arrays) and " + dynamic + " dynamic (the launch's); "
					+ "the device allows " + devicePerBlock + " per block, static and dynamic together, so at most "
					+ Math.max(0, devicePerBlock - staticBytes) + " dynamic for this kernel");
		}
		return dynamic;
	}

}
