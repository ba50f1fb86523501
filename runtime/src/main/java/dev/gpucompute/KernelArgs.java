package dev.gpucompute;

import java.nio.ByteBuffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;

/**
 * Typed access to a launch's arguments inside a {@link CpuKernel}. Buffer views are in native byte
 * order and cover the whole device buffer; positions are independent per call, absolute indexing
 * ({@code get(i)}/{@code put(i, v)}) is the intended use.
 */
public interface KernelArgs {

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
