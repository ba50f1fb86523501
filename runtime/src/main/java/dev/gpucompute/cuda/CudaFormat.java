package dev.gpucompute.cuda;

import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Text formatting for device facts. Pure Java, unit-tested without a driver. */
final class CudaFormat {

	/** The dynamic loader's line naming a missing library, e.g. {@code libcuda.so.1: cannot open shared object file: ...}. */
	private static final Pattern MISSING_LIBRARY = Pattern.compile("lib[\\w.+-]+\\.so[\\w.]*: cannot open shared object file[^\\r\\n]*");

	/** Any other link error's own line. */
	private static final Pattern LINK_ERROR = Pattern.compile("UnsatisfiedLinkError: ([^\\r\\n]+)");

	private CudaFormat() {
	}

	/**
	 * A device UUID as nvidia-smi and DCGM print it: {@code GPU-} followed by the 16 bytes in hex,
	 * grouped 8-4-4-4-12.
	 */
	static String uuid(byte[] bytes) {
		if (bytes == null || bytes.length != 16) {
			throw new IllegalArgumentException("A CUDA UUID has 16 bytes, got " + ((bytes != null) ? bytes.length : "null"));
		}
		StringBuilder text = new StringBuilder(40).append("GPU-");
		for (int i = 0; i < 16; i++) {
			if (i == 4 || i == 6 || i == 8 || i == 10) {
				text.append('-');
			}
			text.append(Character.forDigit((bytes[i] >> 4) & 0xF, 16)).append(Character.forDigit(bytes[i] & 0xF, 16));
		}
		return text.toString();
	}

	/** {@code cuDriverGetVersion}'s number as {@code major.minor}: 13000 is {@code 13.0}, 12060 is {@code 12.6}. */
	static String driverVersion(int version) {
		return (version / 1000) + "." + ((version % 1000) / 10);
	}

	/** A NUL-terminated C string in a byte array. */
	static String cString(byte[] bytes) {
		int end = 0;
		while (end < bytes.length && bytes[end] != 0) {
			end++;
		}
		return new String(bytes, 0, end, StandardCharsets.UTF_8).strip();
	}

	/**
	 * A one-line reason for a failed native library load. JCuda's {@link UnsatisfiedLinkError}
	 * carries two nested stack traces; the useful part is the dynamic loader's line naming the
	 * library it could not open.
	 */
	static String linkFailure(Throwable failure) {
		for (Throwable t = failure; t != null; t = t.getCause()) {
			String message = t.getMessage();
			if (message != null) {
				Matcher matcher = MISSING_LIBRARY.matcher(message);
				if (matcher.find()) {
					return matcher.group().strip();
				}
			}
		}
		for (Throwable t = failure; t != null; t = t.getCause()) {
			String message = t.getMessage();
			if (message != null) {
				Matcher matcher = LINK_ERROR.matcher(message);
				String last = null;
				while (matcher.find()) {
					last = matcher.group(1);
				}
				if (last != null) {
					return last.strip();
				}
			}
		}
		String message = failure.getMessage();
		String firstLine = (message != null) ? message.lines().findFirst().orElse("") : "";
		return failure.getClass().getSimpleName() + (firstLine.isEmpty() ? "" : ": " + firstLine);
	}

}
