package dev.gpucompute.cpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

import dev.gpucompute.CpuKernel;
import dev.gpucompute.Dim3;
import org.jspecify.annotations.Nullable;

/** The block a worker is running; one per worker task, moved from block to block. */
final class CpuBlock implements CpuKernel.Block {

	private static final byte[] NO_SHARED = new byte[0];

	private final Dim3 grid;

	private final Dim3 block;

	private final byte[] shared;

	/** Made on first use: most kernels never ask, and a block object is made per launch and worker. */
	private @Nullable ByteBuffer sharedBuffer;

	private int x;

	private int y;

	private int z;

	CpuBlock(Dim3 grid, Dim3 block, int sharedBytes) {
		this.grid = grid;
		this.block = block;
		this.shared = (sharedBytes == 0) ? NO_SHARED : new byte[sharedBytes];
	}

	/** Moves to the block with this linear index (x fastest), as the first of a run of blocks. */
	void moveTo(long linear) {
		this.x = (int) (linear % this.grid.x());
		long rest = linear / this.grid.x();
		this.y = (int) (rest % this.grid.y());
		this.z = (int) (rest / this.grid.y());
		clearShared();
	}

	/**
	 * Moves to the next block in linear order. Workers run blocks in consecutive runs, and three
	 * 64-bit divisions per block cost as much as a small kernel's body.
	 */
	void advance() {
		if (++this.x == this.grid.x()) {
			this.x = 0;
			if (++this.y == this.grid.y()) {
				this.y = 0;
				this.z++;
			}
		}
		clearShared();
	}

	private void clearShared() {
		if (this.shared.length > 0) {
			Arrays.fill(this.shared, (byte) 0);
		}
	}

	@Override
	public Dim3 blockDim() {
		return this.block;
	}

	@Override
	public Dim3 gridDim() {
		return this.grid;
	}

	@Override
	public int x() {
		return this.x;
	}

	@Override
	public int y() {
		return this.y;
	}

	@Override
	public int z() {
		return this.z;
	}

	@Override
	public ByteBuffer sharedMemory() {
		if (this.sharedBuffer == null) {
			this.sharedBuffer = ByteBuffer.wrap(this.shared).order(ByteOrder.nativeOrder());
		}
		return this.sharedBuffer.clear();
	}

}
