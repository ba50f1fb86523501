package dev.gpucompute.cuda;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A directory of compiled kernels (PTX), one file per key. Entries are written atomically (a
 * temporary file in the same directory, then an atomic rename), so concurrent writers and
 * readers in several processes never see a partial file. The cache is best effort: a failure to
 * read or write is logged and the kernel is compiled instead.
 */
final class KernelCache {

	private static final Logger logger = LoggerFactory.getLogger(KernelCache.class);

	/** Changes when the meaning of a cached entry changes, so old entries stop matching. */
	private static final String FORMAT = "gpu-compute/cuda-kernel-cache/v1";

	private final Path directory;

	KernelCache(Path directory) {
		this.directory = directory;
	}

	Path directory() {
		return this.directory;
	}

	/**
	 * The cache key: SHA-256, in hex, over the source, the compiler options (in order), the target
	 * architecture and the driver version. Every part is length-prefixed, so no two different
	 * inputs hash the same bytes (options {@code ["ab"]} and {@code ["a", "b"]} differ).
	 * @param source the CUDA C source bytes
	 * @param options all compiler options, in the order they are passed
	 * @param arch the target, e.g. {@code compute_90}
	 * @param driverVersion {@code cuDriverGetVersion}, e.g. 13000
	 */
	static String key(byte[] source, List<String> options, String arch, int driverVersion) {
		MessageDigest digest;
		try {
			digest = MessageDigest.getInstance("SHA-256");
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("SHA-256 is required by every Java runtime", ex);
		}
		update(digest, FORMAT.getBytes(StandardCharsets.UTF_8));
		update(digest, source);
		updateInt(digest, options.size());
		for (String option : options) {
			update(digest, option.getBytes(StandardCharsets.UTF_8));
		}
		update(digest, arch.getBytes(StandardCharsets.UTF_8));
		updateInt(digest, driverVersion);
		return HexFormat.of().formatHex(digest.digest());
	}

	private static void update(MessageDigest digest, byte[] bytes) {
		updateInt(digest, bytes.length);
		digest.update(bytes);
	}

	private static void updateInt(MessageDigest digest, int value) {
		digest.update(new byte[] { (byte) (value >>> 24), (byte) (value >>> 16), (byte) (value >>> 8), (byte) value });
	}

	/** The file of an entry: {@code <kernel>-<key>.module} (PTX or a fatbin, as the compiler made it). */
	Path pathFor(String kernelName, String key) {
		return this.directory.resolve(kernelName + "-" + key + ".module");
	}

	/** The cached bytes, or {@code null} when there is no (readable) entry. */
	byte @Nullable [] read(String kernelName, String key) {
		Path path = pathFor(kernelName, key);
		try {
			byte[] bytes = Files.readAllBytes(path);
			return (bytes.length > 0) ? bytes : null;
		}
		catch (NoSuchFileException ex) {
			return null;
		}
		catch (IOException | RuntimeException ex) {
			logger.warn("Could not read cached kernel {}: {}", path, ex.toString());
			return null;
		}
	}

	/** Stores an entry atomically. Returns whether it was stored. */
	boolean write(String kernelName, String key, byte[] bytes) {
		Path target = pathFor(kernelName, key);
		Path temp = null;
		try {
			Files.createDirectories(this.directory);
			temp = Files.createTempFile(this.directory, "." + kernelName + "-", ".tmp");
			Files.write(temp, bytes);
			try {
				Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
			}
			catch (AtomicMoveNotSupportedException ex) {
				Files.move(temp, target, StandardCopyOption.REPLACE_EXISTING);
			}
			return true;
		}
		catch (IOException | RuntimeException ex) {
			logger.warn("Could not cache compiled kernel '{}' in {}: {}", kernelName, this.directory, ex.toString());
			if (temp != null) {
				try {
					Files.deleteIfExists(temp);
				}
				catch (IOException ignored) {
					// best effort
				}
			}
			return false;
		}
	}

	/** Removes an entry that turned out to be unusable. */
	void evict(String kernelName, String key) {
		try {
			Files.deleteIfExists(pathFor(kernelName, key));
		}
		catch (IOException ex) {
			logger.warn("Could not remove cached kernel {}: {}", pathFor(kernelName, key), ex.toString());
		}
	}

}
