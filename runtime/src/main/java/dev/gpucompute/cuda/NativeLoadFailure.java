package dev.gpucompute.cuda;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * Why a native library (JCuda's JNI library, and through it {@code libcuda.so.1}) could not be
 * loaded, read from the loader's own words. JCuda wraps the failure in one
 * {@link UnsatisfiedLinkError} with two nested stack traces as text (the attempt from
 * {@code java.library.path} and the attempt from the jar, extracted to {@code java.io.tmpdir});
 * the second is the one that says what went wrong. Pure Java, unit-tested without a driver.
 */
final class NativeLoadFailure {

	/** What kind of failure it was; decides the advice and whether {@code auto} warns. */
	enum Kind {

		/** {@code libcuda.so.1} is not there: no NVIDIA driver on this machine (or not visible). */
		DRIVER_MISSING(false),

		/** The extracted library sits on a file system mounted {@code noexec}. */
		NOEXEC_TEMP_DIR(true),

		/** The extracted library is truncated or not a library (an interrupted earlier extraction). */
		DAMAGED_LIBRARY(true),

		/** The library could not be written to the temporary directory. */
		TEMP_DIR_UNUSABLE(true),

		/** {@code libcuda} is there but lacks a symbol JCuda needs: a driver older than JCuda. */
		DRIVER_TOO_OLD(true),

		/** The library was built for another architecture. */
		WRONG_ARCHITECTURE(true),

		/** JCuda's Java classes are missing from the class path. */
		JCUDA_MISSING(false),

		/** Anything else. */
		OTHER(true);

		private final boolean broken;

		Kind(boolean broken) {
			this.broken = broken;
		}

		/**
		 * Whether the failure points at a broken installation rather than the plain absence of
		 * CUDA: {@code auto} then warns instead of quietly choosing the CPU.
		 */
		boolean broken() {
			return this.broken;
		}

	}

	/**
	 * A classified failure.
	 * @param kind the kind
	 * @param reason one line for logs and {@code backendReason()}: what failed and what to do
	 */
	record Diagnosis(Kind kind, String reason) {
	}

	private static final Pattern NOT_FOUND = Pattern.compile("(lib[\\w.+-]+\\.so[\\w.]*): cannot open shared object file[^\\r\\n]*");

	/** {@code /path/lib.so: /path/lib.so: message} or {@code /path/lib.so: message}: the path the loader names. */
	private static final Pattern LOADER_LINE = Pattern.compile("UnsatisfiedLinkError: (/[^:\\r\\n]+\\.so[^:\\r\\n]*): ([^\\r\\n]+)");

	private static final Pattern UNDEFINED_SYMBOL = Pattern.compile("undefined symbol: (\\w+)");

	private NativeLoadFailure() {
	}

	/**
	 * Classifies a failure to load JCuda's driver binding.
	 * @param failure what {@code JCudaDriver}'s class initialisation threw
	 * @param tempDir {@code java.io.tmpdir}, where JCuda extracts its library
	 */
	static Diagnosis classify(Throwable failure, Path tempDir) {
		String text = fullText(failure);
		if (failure instanceof NoClassDefFoundError && !text.contains("Could not initialize class")
				&& !text.contains("ExceptionInInitializerError")) {
			return new Diagnosis(Kind.JCUDA_MISSING,
					"JCuda (org.jcuda:jcuda and its natives) is not on the class path: " + failure.getMessage());
		}
		String missingNatives = JCudaNatives.missing(NativeLoadFailure.class.getClassLoader());
		if (missingNatives != null) {
			return new Diagnosis(Kind.JCUDA_MISSING, missingNatives);
		}
		if (text.contains("failed to map segment from shared object")) {
			return new Diagnosis(Kind.NOEXEC_TEMP_DIR, "JCuda's native library " + loaderPath(text, tempDir)
					+ " could not be mapped for execution (failed to map segment from shared object): " + tempDir
					+ " is most likely mounted noexec. Point -Djava.io.tmpdir at a directory that allows execution, "
					+ "or put the library on java.library.path");
		}
		Matcher undefined = UNDEFINED_SYMBOL.matcher(text);
		if (undefined.find()) {
			return new Diagnosis(Kind.DRIVER_TOO_OLD, "the NVIDIA driver's libcuda.so lacks " + undefined.group(1)
					+ ", which JCuda needs: the driver is older than the CUDA version JCuda was built for; update the driver");
		}
		String damaged = firstOf(text, "invalid ELF header", "file too short", "ELF load command", "ELF file",
				"not a dynamic executable", "unexpected reloc type", "cannot read file data");
		if (damaged != null) {
			return new Diagnosis(Kind.DAMAGED_LIBRARY, "JCuda's native library " + loaderPath(text, tempDir) + " is damaged ("
					+ damaged + "), probably from an interrupted extraction; delete it so that it is extracted again");
		}
		String arch = firstOf(text, "wrong ELF class", "cannot open shared object file: Exec format error");
		if (arch != null) {
			return new Diagnosis(Kind.WRONG_ARCHITECTURE, "JCuda's native library " + loaderPath(text, tempDir)
					+ " does not match this machine (" + arch + "); use the jcuda-natives of this platform");
		}
		String temp = firstOf(text, "Could not create directory for temporary file", "No space left on device",
				"Read-only file system", "Permission denied");
		if (temp != null) {
			return new Diagnosis(Kind.TEMP_DIR_UNUSABLE, "JCuda could not extract its native library to " + tempDir + " ("
					+ temp + "); make that directory writable, free space there, or set -Djava.io.tmpdir");
		}
		Matcher notFound = NOT_FOUND.matcher(text);
		if (notFound.find()) {
			String library = notFound.group(1);
			if (library.startsWith("libcuda.")) {
				return new Diagnosis(Kind.DRIVER_MISSING,
						"CUDA driver library (libcuda.so) could not be loaded: " + notFound.group().strip());
			}
			return new Diagnosis(Kind.OTHER, "a library JCuda needs could not be loaded: " + notFound.group().strip());
		}
		return new Diagnosis(Kind.OTHER, "JCuda's driver binding could not be loaded: " + CudaFormat.linkFailure(failure));
	}

	/** The message of {@code failure} and all its causes, one after the other. */
	private static String fullText(Throwable failure) {
		StringBuilder text = new StringBuilder();
		for (Throwable t = failure; t != null; t = t.getCause()) {
			text.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append('\n');
		}
		return text.toString();
	}

	private static String loaderPath(String text, Path tempDir) {
		Matcher matcher = LOADER_LINE.matcher(text);
		return matcher.find() ? matcher.group(1) : "(extracted to " + tempDir + ")";
	}

	private static @Nullable String firstOf(String text, String... needles) {
		for (String needle : needles) {
			if (text.contains(needle)) {
				return needle;
			}
		}
		return null;
	}

}
