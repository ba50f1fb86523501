package dev.gpucompute.cpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

import dev.gpucompute.Dim3;
import dev.gpucompute.KernelBlock;

/** The block a worker is running; one per worker task, moved from block to block. */
final class CpuBlock implements KernelBlock {

	private final Dim3 grid;

	private final Dim3 block;

	private final byte[] shared;

	private final ByteBuffer sharedBuffer;

	private int x;

	private int y;

	private int z;

	CpuBlock(Dim3 grid, Dim3 block, int sharedBytes) {
		this.grid = grid;
		this.block = block;
		this.shared = new byte[sharedBytes];
		this.sharedBuffer = ByteBuffer.wrap(this.shared).order(ByteOrder.nativeOrder());
	}

	void moveTo(long linear) {
		this.x = (int) (linear % this.grid.x());
		long rest = linear / this.grid.x();
		this.y = (int) (rest % this.grid.y());
		this.z = (int) (rest / this.grid.y());
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
		return this.sharedBuffer.clear();
	}

}
