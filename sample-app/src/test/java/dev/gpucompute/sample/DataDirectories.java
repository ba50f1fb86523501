package dev.gpucompute.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/**
 * Data directories of application tests that start a service of their own: each test class with
 * its own settings gets its own directory (Spring keeps each context alive for the whole run, so
 * two services must never share one), deleted after the class.
 */
final class DataDirectories {

	private DataDirectories() {
	}

	/** A new empty directory under the system's temporary directory. */
	static Path create(String prefix) {
		try {
			return Files.createTempDirectory(prefix);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/** Deletes {@code dir} and everything in it; what cannot be deleted is left for the OS. */
	static void delete(Path dir) {
		try (var files = Files.walk(dir)) {
			files.sorted(Comparator.reverseOrder()).forEach((file) -> file.toFile().delete());
		}
		catch (IOException ex) {
			// A temporary directory: the OS cleans it up eventually.
		}
	}

}
