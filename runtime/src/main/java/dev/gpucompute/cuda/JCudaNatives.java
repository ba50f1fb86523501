package dev.gpucompute.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Properties;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * JCuda's native libraries for the platform this JVM runs on. The starter brings JCuda's Java
 * classes but not its natives, which are published per platform
 * ({@code org.jcuda:jcuda-natives:<version>:<classifier>}); an application that is meant to run on
 * a GPU adds the natives of its platform. This class tells whether they are there and, if not,
 * what to add, for the start-up log and the failure report.
 */
public final class JCudaNatives {

	/** Classifiers of {@code org.jcuda:jcuda-natives} published on Maven Central for JCuda 12.6.0. */
	static final Set<String> PUBLISHED = Set.of("linux-x86_64", "windows-x86_64");

	private JCudaNatives() {
	}

	/**
	 * What is missing for JCuda to load on this platform, as a sentence that says what to add, or
	 * {@code null} when the natives are there or JCuda itself is not on the class path.
	 * @param classLoader the class loader that loads JCuda
	 */
	public static @Nullable String missing(ClassLoader classLoader) {
		String version = jcudaVersion(classLoader);
		if (version == null) {
			return null;
		}
		String classifier = classifier();
		String library = libraryFileName("JCudaDriver-" + version + "-" + classifier);
		if (classLoader.getResource("lib/" + library) != null || onLibraryPath(library)) {
			return null;
		}
		String coordinates = "org.jcuda:jcuda-natives:" + version + ":" + classifier;
		if (PUBLISHED.contains(classifier)) {
			return "JCuda's native libraries for " + classifier + " are not on the class path: add the dependency "
					+ coordinates + " (runtime scope) to the application";
		}
		return "JCuda's native libraries for " + classifier + " are not on the class path, and JCuda publishes none "
				+ "for this platform: build them from JCuda's sources (github.com/jcuda) and add them as " + coordinates
				+ ", or put " + library + " on java.library.path";
	}

	/** The platform as JCuda names it in its classifiers and library names: {@code linux-x86_64}. */
	static String classifier() {
		String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
		String osName = os.startsWith("windows") ? "windows" : (os.startsWith("mac") || os.startsWith("darwin")) ? "apple"
				: os.startsWith("linux") ? "linux" : os.replace(' ', '_');
		String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
		String archName = switch (arch) {
			case "amd64", "x86_64", "x64" -> "x86_64";
			case "aarch64", "arm64" -> "aarch64";
			case "ppc64le", "ppc64" -> "ppc_64";
			default -> arch;
		};
		return osName + "-" + archName;
	}

	private static String libraryFileName(String name) {
		String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
		if (os.startsWith("windows")) {
			return name + ".dll";
		}
		return "lib" + name + ((os.startsWith("mac") || os.startsWith("darwin")) ? ".dylib" : ".so");
	}

	private static boolean onLibraryPath(String library) {
		String path = System.getProperty("java.library.path", "");
		for (String directory : path.split(java.io.File.pathSeparator)) {
			if (!directory.isBlank() && Files.isRegularFile(Path.of(directory, library))) {
				return true;
			}
		}
		return false;
	}

	/** The version of JCuda on the class path of {@code classLoader}, from its Maven metadata, or {@code null}. */
	static @Nullable String jcudaVersion(ClassLoader classLoader) {
		try (InputStream in = classLoader.getResourceAsStream("META-INF/maven/org.jcuda/jcuda/pom.properties")) {
			if (in == null) {
				return null;
			}
			Properties properties = new Properties();
			properties.load(in);
			return properties.getProperty("version");
		}
		catch (IOException ex) {
			return null;
		}
	}

}
