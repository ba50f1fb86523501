package dev.gpucompute.expression;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.opentest4j.AssertionFailedError;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;

/**
 * Runs an expression kernel on the CPU backend (its generated Java) and on the emulator (its generated
 * CUDA C) with the same arguments, and compares every buffer: bit for bit (any NaN matching any NaN,
 * as IEEE 754 leaves NaN's bits open), or within the ulps given for a buffer written by an inexact
 * function.
 */
final class BothSides {

	/** A buffer argument: its element type and contents (native order). */
	record Buffer(ElementType type, ByteBuffer bytes) {

		int count() {
			return this.bytes.capacity() / this.type.bytes();
		}

	}

	private BothSides() {
	}

	static Buffer of(Object array) {
		if (array instanceof float[] v) {
			ByteBuffer b = allocate(4L * v.length);
			b.asFloatBuffer().put(v);
			return new Buffer(ElementType.FLOAT, b);
		}
		if (array instanceof double[] v) {
			ByteBuffer b = allocate(8L * v.length);
			b.asDoubleBuffer().put(v);
			return new Buffer(ElementType.DOUBLE, b);
		}
		if (array instanceof int[] v) {
			ByteBuffer b = allocate(4L * v.length);
			b.asIntBuffer().put(v);
			return new Buffer(ElementType.INT, b);
		}
		if (array instanceof long[] v) {
			ByteBuffer b = allocate(8L * v.length);
			b.asLongBuffer().put(v);
			return new Buffer(ElementType.LONG, b);
		}
		throw new IllegalArgumentException("not an array: " + array);
	}

	/** An output of {@code count} elements, zeroed. */
	static Buffer zeros(ElementType type, int count) {
		return new Buffer(type, allocate((long) type.bytes() * count));
	}

	private static ByteBuffer allocate(long bytes) {
		return ByteBuffer.allocate(Math.toIntExact(bytes)).order(ByteOrder.nativeOrder());
	}

	/** The buffers' contents after a launch on {@code context}, in argument order. */
	static List<ByteBuffer> onCpu(GpuContext context, KernelSource source, LaunchConfig config, Object... args) {
		GpuLauncher launcher = context.launcher();
		Object[] launchArgs = args.clone();
		List<DeviceBuffer> buffers = new ArrayList<>();
		try {
			for (int k = 0; k < args.length; k++) {
				if (args[k] instanceof Buffer buffer) {
					DeviceBuffer device = launcher.upload(HostArray.of(buffer.bytes().duplicate().clear()));
					buffers.add(device);
					launchArgs[k] = device;
				}
			}
			launcher.launch(source, config, launchArgs);
			List<ByteBuffer> results = new ArrayList<>();
			for (DeviceBuffer device : buffers) {
				ByteBuffer result = allocate(device.byteSize());
				device.download(HostArray.of(result)).join();
				results.add(result);
			}
			return results;
		}
		finally {
			for (DeviceBuffer device : buffers) {
				device.close();
			}
		}
	}

	/** The same launch on the emulator. */
	static List<ByteBuffer> onEmulator(ExpressionEmulator emulator, KernelSource source, int grid, int block,
			Object... args) {
		Object[] emulated = new Object[args.length];
		for (int k = 0; k < args.length; k++) {
			emulated[k] = (args[k] instanceof Buffer buffer) ? buffer.bytes().duplicate().clear() : args[k];
		}
		return emulator.run(source, grid, block, 17, emulated);
	}

	/**
	 * Compares both sides' buffers.
	 * @param ulps for buffer arguments written by inexact functions: the argument index and the ulps allowed
	 * @return how many elements were compared
	 */
	static long compare(KernelSource source, List<String> names, Object[] args, List<ByteBuffer> cpu,
			List<ByteBuffer> emulated, Map<Integer, Integer> ulps) {
		assertThat(emulated).hasSameSizeAs(cpu);
		long compared = 0;
		int buffer = 0;
		StringBuilder failures = new StringBuilder();
		for (int k = 0; k < args.length; k++) {
			if (!(args[k] instanceof Buffer arg)) {
				continue;
			}
			ByteBuffer a = cpu.get(buffer);
			ByteBuffer b = emulated.get(buffer);
			buffer++;
			int allowed = ulps.getOrDefault(k, 0);
			int mismatches = 0;
			for (int e = 0; e < arg.count(); e++) {
				String difference = differ(arg.type(), a, b, e, allowed);
				if (difference != null) {
					if (mismatches++ < 5) {
						failures.append("\n  ").append(names.get(k)).append('[').append(e).append("]: Java ").append(difference)
							.append(inputs(args, e));
					}
				}
				compared++;
			}
			if (mismatches > 5) {
				failures.append("\n  ").append(names.get(k)).append(": ").append(mismatches).append(" elements differ in all");
			}
		}
		if (failures.length() > 0) {
			throw new AssertionFailedError("Kernel '" + source.name() + "': the generated Java and the emulated CUDA "
					+ "differ:" + failures);
		}
		return compared;
	}

	/** The inputs at element {@code e}, for a failure message. */
	private static String inputs(Object[] args, int e) {
		StringBuilder text = new StringBuilder(" (the first buffers at that index:");
		int shown = 0;
		for (Object arg : args) {
			if (arg instanceof Buffer buffer && e < buffer.count() && shown++ < 3) {
				text.append(' ').append(value(buffer.type(), buffer.bytes(), e));
			}
		}
		return text.append(')').toString();
	}

	private static String differ(ElementType type, ByteBuffer a, ByteBuffer b, int e, int ulps) {
		switch (type) {
			case FLOAT -> {
				float p = a.getFloat(4 * e);
				float q = b.getFloat(4 * e);
				boolean same = Float.floatToIntBits(p) == Float.floatToIntBits(q)
						|| (ulps > 0 && !Float.isNaN(p) && !Float.isNaN(q) && ulpsApart(p, q) <= ulps);
				return same ? null : value(type, a, e) + " vs CUDA " + value(type, b, e);
			}
			case DOUBLE -> {
				double p = a.getDouble(8 * e);
				double q = b.getDouble(8 * e);
				boolean same = Double.doubleToLongBits(p) == Double.doubleToLongBits(q)
						|| (ulps > 0 && !Double.isNaN(p) && !Double.isNaN(q) && ulpsApart(p, q) <= ulps);
				return same ? null : value(type, a, e) + " vs CUDA " + value(type, b, e);
			}
			case INT -> {
				return (a.getInt(4 * e) == b.getInt(4 * e)) ? null : a.getInt(4 * e) + " vs CUDA " + b.getInt(4 * e);
			}
			case LONG -> {
				return (a.getLong(8 * e) == b.getLong(8 * e)) ? null : a.getLong(8 * e) + " vs CUDA " + b.getLong(8 * e);
			}
			default -> throw new IllegalArgumentException(type.toString());
		}
	}

	private static String value(ElementType type, ByteBuffer buffer, int e) {
		return switch (type) {
			case FLOAT -> buffer.getFloat(4 * e) + "/0x" + Integer.toHexString(Float.floatToRawIntBits(buffer.getFloat(4 * e)));
			case DOUBLE -> buffer.getDouble(8 * e) + "/0x" + Long.toHexString(Double.doubleToRawLongBits(buffer.getDouble(8 * e)));
			case INT -> Integer.toString(buffer.getInt(4 * e));
			case LONG -> Long.toString(buffer.getLong(8 * e));
			default -> "?";
		};
	}

	static long ulpsApart(float a, float b) {
		return Math.abs(ordered(Float.floatToIntBits(a)) - ordered(Float.floatToIntBits(b)));
	}

	static long ulpsApart(double a, double b) {
		long x = Double.doubleToLongBits(a);
		long y = Double.doubleToLongBits(b);
		x = (x < 0) ? -(x & Long.MAX_VALUE) : x;
		y = (y < 0) ? -(y & Long.MAX_VALUE) : y;
		long d = x - y;
		return (((x ^ y) & (x ^ d)) < 0) ? Long.MAX_VALUE : Math.abs(d);
	}

	private static long ordered(int bits) {
		return (bits < 0) ? -(long) (bits & 0x7fffffff) : bits;
	}

}
