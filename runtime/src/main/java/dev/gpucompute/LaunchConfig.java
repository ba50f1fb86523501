package dev.gpucompute;

/**
 * How a kernel is launched: grid size in blocks, block size in threads, and dynamic shared memory
 * per block in bytes. Checked against the device's limits before any launch.
 *
 * <p>A block needs at least 1 thread in every axis. A grid may have 0 blocks in an axis: that is an
 * <b>empty launch</b> ({@link #isEmpty()}), what {@code linear(0, 256)} or {@code covering(0, h, block)}
 * give for empty input. Launching it is checked like any other launch (arguments, block and shared
 * memory limits, open context and stream, a loaded kernel with a body for the backend) and then does
 * nothing on the device; it counts as a successful launch (listeners and {@code gpu.kernel.launches}
 * see it) but is never timed, since no device time is spent. So callers need no special case for
 * empty input.
 */
public record LaunchConfig(Dim3 grid, Dim3 block, int sharedMemoryBytes) {

	public LaunchConfig {
		if (grid == null || block == null) {
			throw new InvalidLaunchConfigException("grid and block dimensions are required");
		}
		if (block.volume() == 0) {
			throw new InvalidLaunchConfigException("A block needs at least 1 thread in every axis, got " + block);
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
	 * {@code ceil(n / blockSize)} blocks; an empty launch when {@code n} is 0.
	 */
	public static LaunchConfig linear(long n, int blockSize) {
		if (n < 0) {
			throw new InvalidLaunchConfigException("A linear launch covers 0 or more elements, got " + n);
		}
		if (blockSize < 1) {
			throw new InvalidLaunchConfigException("Block size must be at least 1, got " + blockSize);
		}
		return new LaunchConfig(Dim3.of(blocks(n, blockSize, "x")), Dim3.of(blockSize), 0);
	}

	/**
	 * A two-dimensional launch covering {@code width x height} elements (x along the width) with
	 * blocks of {@code block}: {@code ceil(width / block.x) x ceil(height / block.y)} blocks; an empty
	 * launch when either is 0. For images and matrices, e.g. {@code covering(w, h, Dim3.of(16, 16))}.
	 */
	public static LaunchConfig covering(long width, long height, Dim3 block) {
		if (block == null) {
			throw new InvalidLaunchConfigException("grid and block dimensions are required");
		}
		if (width < 0 || height < 0) {
			throw new InvalidLaunchConfigException("A launch covers 0 or more elements in each axis, got " + width + "x" + height);
		}
		if (block.x() < 1 || block.y() < 1) {
			throw new InvalidLaunchConfigException("A block needs at least 1 thread in every axis, got " + block);
		}
		return new LaunchConfig(Dim3.of(blocks(width, block.x(), "x"), blocks(height, block.y(), "y")), block, 0);
	}

	private static int blocks(long n, int blockSize, String axis) {
		long blocks = n / blockSize + ((n % blockSize == 0) ? 0 : 1); // no overflow, unlike (n + blockSize - 1) / blockSize
		if (blocks > Integer.MAX_VALUE) {
			throw new InvalidLaunchConfigException(n + " elements need " + blocks + " blocks, more than a grid axis holds ("
					+ axis + ")");
		}
		return (int) blocks;
	}

	/** A copy with the given dynamic shared memory per block. */
	public LaunchConfig withSharedMemory(int bytes) {
		return new LaunchConfig(this.grid, this.block, bytes);
	}

	/** Whether the grid has no block (an axis of 0): launching does nothing on the device. */
	public boolean isEmpty() {
		return this.grid.volume() == 0;
	}

}
