package dev.gpucompute.sample;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/**
 * The data directory of the service that {@link RunningAppFixture}'s subclasses share (Spring keeps that
 * context for the whole run, so it is deleted when the test JVM ends). A test class with a service of
 * its own takes a static {@code @TempDir} instead and closes its service after the class
 * ({@code @DirtiesContext}), before JUnit deletes the directory.
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
