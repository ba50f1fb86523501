package dev.gpucompute.benchmarks;

import java.nio.ByteBuffer;

import dev.gpucompute.CpuKernel;
import dev.gpucompute.Dim3;
import dev.gpucompute.LaunchConfig;

/** The minimum a direct call of a {@link dev.gpucompute.CpuKernel} needs, for the Java baselines. */
final class Blocks {

	private Blocks() {
	}

	/** Block coordinates of a one-dimensional grid, moved from block to block like the CPU backend's. */
	static final class Block implements CpuKernel.Block {

		private final Dim3 grid;

		private final Dim3 block;

		private int x;

		Block(LaunchConfig config) {
			this.grid = config.grid();
			this.block = config.block();
		}

		void moveTo(long linear) {
			this.x = (int) linear;
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
			return 0;
		}

		@Override
		public int z() {
			return 0;
		}

		@Override
		public ByteBuffer sharedMemory() {
			return ByteBuffer.allocate(0);
		}

	}

	/** The arguments of a kernel that takes none. */
	static final class NoArgs implements CpuKernel.Args {

		@Override
		public int count() {
			return 0;
		}

		@Override
		public int i32(int index) {
			throw new IndexOutOfBoundsException(index);
		}

		@Override
		public long i64(int index) {
			throw new IndexOutOfBoundsException(index);
		}

		@Override
		public float f32(int index) {
			throw new IndexOutOfBoundsException(index);
		}

		@Override
		public double f64(int index) {
			throw new IndexOutOfBoundsException(index);
		}

		@Override
		public ByteBuffer bytes(int index) {
			throw new IndexOutOfBoundsException(index);
		}

	}

}
