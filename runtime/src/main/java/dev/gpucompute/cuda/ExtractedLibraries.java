package dev.gpucompute.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Locale;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Puts JCuda's JNI libraries into {@code java.io.tmpdir} before JCuda loads them. JCuda extracts
 * {@code lib<name>-<version>-<os>-<arch>.so} from its natives jar into that directory, but only when
 * no file of that name exists, and writes it in place: a copy left truncated by an interrupted
 * extraction, or one that another JVM is still writing, is then loaded as it is, and the dynamic
 * loader dies on it with SIGBUS, taking the JVM with it. Here the file is compared with the jar's
 * copy and, when missing or different, written to a temporary file in the same directory and
 * renamed into place atomically, so JCuda only ever finds a complete library.
 */
final class ExtractedLibraries {

	private static final Logger logger = LoggerFactory.getLogger(ExtractedLibraries.class);

	private ExtractedLibraries() {
	}

	/**
	 * The file name JCuda gives {@code baseName} on this platform, e.g.
	 * {@code libJCudaDriver-12.6.0-linux-x86_64.so}, or {@code null} when this is not a platform
	 * handled here (only Linux) or JCuda's version cannot be read.
	 */
	static @Nullable String fileName(ClassLoader loader, String baseName) {
		if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux")) {
			return null;
		}
		String arch = switch (System.getProperty("os.arch", "").toLowerCase(Locale.ROOT)) {
			case "amd64", "x86_64" -> "x86_64";
			case "aarch64", "arm64" -> "aarch64";
			case "ppc64le" -> "ppc_64";
			default -> null;
		};
		String version = JCudaNatives.jcudaVersion(loader);
		return (arch == null || version == null) ? null : "lib" + baseName + "-" + version + "-linux-" + arch + ".so";
	}

	/**
	 * Makes {@code tempDir/fileName} an exact copy of the jar's {@code lib/fileName}.
	 * @return {@code null} when the file is in place (or the jar has no such library, so JCuda will
	 * look on {@code java.library.path}), else why it could not be put there
	 */
	static @Nullable String ensure(ClassLoader loader, Path tempDir, String fileName) {
		byte[] expected;
		try (InputStream in = loader.getResourceAsStream("lib/" + fileName)) {
			if (in == null) {
				return null;
			}
			expected = in.readAllBytes();
		}
		catch (IOException ex) {
			return "JCuda's native library lib/" + fileName + " could not be read from its jar: " + ex;
		}
		Path target = tempDir.resolve(fileName);
		try {
			if (Files.isRegularFile(target) && Files.size(target) == expected.length
					&& Arrays.equals(Files.readAllBytes(target), expected)) {
				return null;
			}
			boolean replacing = Files.exists(target);
			Files.createDirectories(tempDir);
			Path temp = Files.createTempFile(tempDir, "." + fileName + "-", ".tmp");
			try {
				Files.write(temp, expected);
				try {
					Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
				}
				catch (AtomicMoveNotSupportedException ex) {
					Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
				}
			}
			finally {
				Files.deleteIfExists(temp);
			}
			if (replacing) {
				logger.warn("Replaced {}, which differed from the copy in JCuda's jar (truncated or damaged)", target);
			}
			return null;
		}
		catch (IOException | RuntimeException ex) {
			if (Files.exists(target)) {
				return "JCuda's native library " + target + " differs from the copy in JCuda's jar (truncated or damaged) "
						+ "and could not be replaced (" + ex + "); delete it, or set -Djava.io.tmpdir to a writable directory";
			}
			return "JCuda could not extract its native library to " + tempDir + " (" + ex
					+ "); make that directory writable, free space there, or set -Djava.io.tmpdir";
		}
	}

}
