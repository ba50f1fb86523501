package dev.gpucompute.cuda;

import java.nio.ByteBuffer;

import dev.gpucompute.spi.LaunchArgs;
import dev.gpucompute.spi.NativeMemory;

/**
 * How launch arguments become {@code cuLaunchKernel}'s parameter values: one 8-byte slot per
 * parameter, every byte of it written. The driver copies as many bytes from a slot as the
 * kernel's parameter has, from the slot's start; a 4-byte value ({@code INT}, {@code FLOAT})
 * occupies the first 4 bytes and the other 4 are set deterministically (an {@code INT}'s sign, a
 * {@code FLOAT}'s zero), so a slot reused from an earlier launch never leaks stale bytes into a
 * kernel whose parameter is wider than the declared type. Pure Java, unit-tested without a driver.
 */
final class LaunchPacking {

	/** The device address of a buffer argument, after checking it belongs to the backend. */
	@FunctionalInterface
	interface Addresses {

		long addressOf(NativeMemory memory, int index, String kernelName);

	}

	private LaunchPacking() {
	}

	/**
	 * Writes {@code args} into {@code values} (native byte order, at least {@code 8 * count}
	 * bytes), slot {@code i} at byte {@code 8 * i}.
	 */
	static void pack(LaunchArgs args, ByteBuffer values, Addresses addresses, String kernelName) {
		int count = args.count();
		for (int i = 0; i < count; i++) {
			int at = i << 3;
			switch (args.type(i)) {
				case INT -> {
					int value = args.i32(i);
					values.putInt(at, value);
					// In a little-endian slot this is the sign extension to 64 bits.
					values.putInt(at + 4, value >> 31);
				}
				case LONG -> values.putLong(at, args.i64(i));
				case FLOAT -> {
					values.putFloat(at, args.f32(i));
					values.putInt(at + 4, 0);
				}
				case DOUBLE -> values.putDouble(at, args.f64(i));
				case BUFFER -> values.putLong(at, addresses.addressOf(args.memory(i), i, kernelName));
			}
		}
	}

}
