package dev.gpucompute;

/**
 * How a kernel is launched: grid size in blocks, block size in threads, and dynamic shared memory
 * per block in bytes. Checked against the device's limits before any launch.
 */
public record LaunchConfig(Dim3 grid, Dim3 block, int sharedMemoryBytes) {

	public LaunchConfig {
		if (grid == null || block == null) {
			throw new InvalidLaunchConfigException("grid and block dimensions are required");
		}
		if (sharedMemoryBytes < 0) {
			throw new InvalidLaunchConfigException("Dynamic shared memory must not be negative, got " + sharedMemoryBytes);
		}
	}

	public static LaunchConfig of(Dim3 grid, Dim3 block) {
		return new LaunchConfig(grid, block, 0);
	}

	/**
	 * A one-dimensional launch covering {@code n} elements with {@code blockSize} threads per block:
	 * {@code ceil(n / blockSize)} blocks.
	 */
	public static LaunchConfig linear(long n, int blockSize) {
		if (n < 1) {
			throw new InvalidLaunchConfigException("A linear launch needs at least 1 element, got " + n);
		}
		if (blockSize < 1) {
			throw new InvalidLaunchConfigException("Block size must be at least 1, got " + blockSize);
		}
		long blocks = n / blockSize + ((n % blockSize == 0) ? 0 : 1); // no overflow, unlike (n + blockSize - 1) / blockSize
		if (blocks > Integer.MAX_VALUE) {
			throw new InvalidLaunchConfigException(n + " elements need " + blocks + " blocks, more than a grid axis holds");
		}
		return new LaunchConfig(Dim3.of((int) blocks), Dim3.of(blockSize), 0);
	}

	/** A copy with the given dynamic shared memory per block. */
	public LaunchConfig withSharedMemory(int bytes) {
		return new LaunchConfig(this.grid, this.block, bytes);
	}

}
