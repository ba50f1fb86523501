package dev.gpucompute.cpu;

import java.nio.ByteBuffer;

import dev.gpucompute.CpuKernel;
import dev.gpucompute.ParamType;
import dev.gpucompute.spi.LaunchArgs;

/** A launch's arguments copied at enqueue time, since the kernel runs later. */
final class CpuArgs implements CpuKernel.Args {

	private final long[] scalars;

	private final CpuMemory[] buffers;

	CpuArgs(LaunchArgs args) {
		int count = args.count();
		this.scalars = new long[count];
		this.buffers = new CpuMemory[count];
		for (int i = 0; i < count; i++) {
			ParamType type = args.type(i);
			switch (type) {
				case INT -> this.scalars[i] = args.i32(i);
				case LONG -> this.scalars[i] = args.i64(i);
				case FLOAT -> this.scalars[i] = Float.floatToRawIntBits(args.f32(i));
				case DOUBLE -> this.scalars[i] = Double.doubleToRawLongBits(args.f64(i));
				case BUFFER -> this.buffers[i] = (CpuMemory) args.memory(i);
			}
		}
	}

	@Override
	public int count() {
		return this.scalars.length;
	}

	@Override
	public int i32(int index) {
		return (int) this.scalars[index];
	}

	@Override
	public long i64(int index) {
		return this.scalars[index];
	}

	@Override
	public float f32(int index) {
		return Float.intBitsToFloat((int) this.scalars[index]);
	}

	@Override
	public double f64(int index) {
		return Double.longBitsToDouble(this.scalars[index]);
	}

	@Override
	public ByteBuffer bytes(int index) {
		CpuMemory memory = this.buffers[index];
		if (memory == null) {
			throw new IllegalArgumentException("Argument " + index + " is not a buffer");
		}
		return memory.view();
	}

}
