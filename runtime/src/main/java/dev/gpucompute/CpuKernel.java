package dev.gpucompute;

import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * The Java implementation of a kernel for the CPU backend. Called once per block, blocks spread
 * over the backend's worker threads; so an implementation must be safe to run concurrently for
 * different blocks, exactly like a CUDA kernel.
 */
@FunctionalInterface
public interface CpuKernel {

	/**
	 * Runs one block.
	 * @param block the block's coordinates; only valid during this call (it is reused)
	 * @param args typed access to the launch arguments; only valid during this call. Every block of
	 * one launch gets the same instance and every launch its own, so an implementation may key
	 * per-worker caches of what a launch reads by its identity (weakly held)
	 */
	void run(Block block, Args args);

	/**
	 * The coordinates of the block a {@link CpuKernel} is running. A CPU "block" stands for all of its
	 * threads at once: the implementation loops over {@link #firstIndex()} to {@link #endIndex(long)}.
	 * Valid only for the duration of one {@link CpuKernel#run} call.
	 */
	public interface Block {

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

	/**
	 * Typed access to a launch's arguments inside a {@link CpuKernel}. Buffer views are in native byte
	 * order and cover the whole device buffer; positions are independent per call, absolute indexing
	 * ({@code get(i)}/{@code put(i, v)}) is the intended use.
	 */
	public interface Args {

		int count();

		int i32(int index);

		long i64(int index);

		float f32(int index);

		double f64(int index);

		ByteBuffer bytes(int index);

		default FloatBuffer floats(int index) {
			return bytes(index).asFloatBuffer();
		}

		default IntBuffer ints(int index) {
			return bytes(index).asIntBuffer();
		}

		default LongBuffer longs(int index) {
			return bytes(index).asLongBuffer();
		}

		default DoubleBuffer doubles(int index) {
			return bytes(index).asDoubleBuffer();
		}

	}

}
