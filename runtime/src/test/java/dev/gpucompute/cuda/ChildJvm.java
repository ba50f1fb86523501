package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.slf4j.spi.SLF4JServiceProvider;

/**
 * Runs a {@code main} class of the tests in a child JVM. Its class path is built from where the
 * classes it needs were actually loaded from (their code sources), not from the launcher's
 * {@code java.class.path}, which names only a booter jar under Surefire's manifest-only mode and
 * only the launcher under the JUnit console's {@code --class-path}: the child finds its classes
 * however the tests were started.
 */
final class ChildJvm {

	/** What a probe printed and how it ended. */
	record Result(int exitCode, String output, Map<String, String> values) {

		/** The {@code KEY=value} line {@code key}; fails the test when the probe did not print it. */
		String get(String key) {
			assertThat(this.values).as("probe output:\n%s", this.output).containsKey(key);
			return this.values.get(key);
		}

	}

	private ChildJvm() {
	}

	/**
	 * The class path for a probe: the code sources of the runtime (classes and test classes), JCuda,
	 * its natives jar, JNA, SLF4J and its provider, JUnit's API (named by shared test support), and
	 * of {@code extra}.
	 */
	static String classPath(Class<?>... extra) {
		Set<String> entries = new LinkedHashSet<>();
		List<Class<?>> classes = new ArrayList<>(List.of(ChildJvm.class, CudaDeviceBackend.class, jcuda.Pointer.class,
				org.slf4j.LoggerFactory.class, org.junit.jupiter.api.Assertions.class, org.opentest4j.AssertionFailedError.class,
				org.junit.jupiter.api.extension.ExecutionCondition.class));
		classes.addAll(List.of(extra));
		for (Class<?> type : classes) {
			entries.add(location(type.getProtectionDomain().getCodeSource(), type.getName()));
		}
		optionalClass("com.sun.jna.Native", entries);
		for (SLF4JServiceProvider provider : ServiceLoader.load(SLF4JServiceProvider.class, ChildJvm.class.getClassLoader())) {
			entries.add(location(provider.getClass().getProtectionDomain().getCodeSource(), provider.getClass().getName()));
		}
		String natives = ExtractedLibraries.fileName(ChildJvm.class.getClassLoader(), "JCudaDriver");
		if (natives != null) {
			URL url = ChildJvm.class.getClassLoader().getResource("lib/" + natives);
			if (url != null) {
				entries.add(jarOf(url));
			}
		}
		return String.join(java.io.File.pathSeparator, entries);
	}

	private static void optionalClass(String name, Set<String> entries) {
		try {
			Class<?> type = Class.forName(name, false, ChildJvm.class.getClassLoader());
			entries.add(location(type.getProtectionDomain().getCodeSource(), name));
		}
		catch (ClassNotFoundException ex) {
			// not on this class path: the probe does not need it
		}
	}

	private static String location(CodeSource source, String what) {
		if (source == null || source.getLocation() == null) {
			throw new IllegalStateException("No code source for " + what);
		}
		try {
			return Path.of(source.getLocation().toURI()).toString();
		}
		catch (URISyntaxException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/** The jar file of a {@code jar:file:/...!/entry} URL. */
	private static String jarOf(URL url) {
		String text = url.toString();
		if (!text.startsWith("jar:")) {
			throw new IllegalStateException("Not in a jar: " + url);
		}
		try {
			return Path.of(new java.net.URI(text.substring(4, text.indexOf("!/")))).toString();
		}
		catch (URISyntaxException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Runs {@code mainClass} with the given JVM options and waits up to {@code timeoutSeconds}.
	 * Output goes to a file, so that a hung child ends in the timeout rather than a blocked read.
	 */
	static Result run(Class<?> mainClass, List<String> jvmOptions, long timeoutSeconds, Class<?>... extra)
			throws IOException, InterruptedException {
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		List<String> command = new ArrayList<>();
		command.add(java);
		command.addAll(jvmOptions);
		command.add("-cp");
		command.add(classPath(extra));
		command.add(mainClass.getName());
		Path log = Files.createTempFile("gpu-compute-child", ".log");
		try {
			Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
			if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				fail("The child JVM did not finish within " + timeoutSeconds + " s; its output:\n" + Files.readString(log));
			}
			String output = Files.readString(log, StandardCharsets.UTF_8);
			return new Result(process.exitValue(), output, parse(output));
		}
		finally {
			Files.deleteIfExists(log);
		}
	}

	private static Map<String, String> parse(String text) {
		Map<String, String> values = new HashMap<>();
		for (String line : text.split("\\R")) {
			int eq = line.indexOf('=');
			if (eq > 0 && line.substring(0, eq).matches("[A-Z_]+")) {
				values.putIfAbsent(line.substring(0, eq), line.substring(eq + 1));
			}
		}
		return values;
	}

}
