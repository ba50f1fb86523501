package dev.gpucompute.spi;

import java.util.Locale;

/**
 * Byte counts as people read them in logs and reports: {@code 512 B}, {@code 1.5 KiB},
 * {@code 79.1 GiB}. One format for the whole runtime, so that a backend's device description
 * (the CUDA backend's probe) and the Spring starter's shutdown report print memory the same way.
 * Stateless and thread-safe.
 */
public final class ByteSizes {

	private static final String[] UNITS = { "KiB", "MiB", "GiB", "TiB" };

	private ByteSizes() {
	}

	/**
	 * {@code bytes} with a binary unit and one decimal ({@code 80.0 GiB}); below 1 KiB the exact
	 * count ({@code 512 B}); TiB is the largest unit. The decimal separator is always a dot.
	 * @param bytes a byte count; a negative one is printed as it is, in bytes
	 */
	public static String format(long bytes) {
		if (bytes < 1024) {
			return bytes + " B";
		}
		double value = bytes;
		int unit = -1;
		while (value >= 1024 && unit < UNITS.length - 1) {
			value /= 1024;
			unit++;
		}
		return String.format(Locale.ROOT, "%.1f %s", value, UNITS[unit]);
	}

}
