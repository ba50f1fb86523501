package dev.gpucompute;

/**
 * The coordinates of the block a {@link CpuKernel} is running. A CPU "block" stands for all of its
 * threads at once: the implementation loops over {@link #firstIndex()} to {@link #endIndex(long)}.
 * Valid only for the duration of one {@link CpuKernel#run} call.
 */
public interface KernelBlock {

	/** {@code blockDim}. */
	Dim3 blockDim();

	/** {@code gridDim}. */
	Dim3 gridDim();

	/** {@code blockIdx.x}, zero-based. */
	int x();

	/** {@code blockIdx.y}, zero-based. */
	int y();

	/** {@code blockIdx.z}, zero-based. */
	int z();

	/** {@code blockIdx.x * blockDim.x}: the first global x index this block covers. */
	default long firstIndex() {
		return (long) x() * blockDim().x();
	}

	/** The end (exclusive) of this block's x range, clipped to {@code n}. */
	default long endIndex(long n) {
		return Math.min(n, firstIndex() + blockDim().x());
	}

	/** Dynamic shared memory of this block, {@code sharedMemoryBytes} long, zeroed per block. */
	java.nio.ByteBuffer sharedMemory();

}
