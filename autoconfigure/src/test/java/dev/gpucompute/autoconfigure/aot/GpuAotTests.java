package dev.gpucompute.autoconfigure.aot;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.boot.SpringApplicationAotProcessor;
import org.springframework.context.aot.AbstractAotProcessor.Settings;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.util.FileSystemUtils;

/**
 * Spring AOT: an application on the starter is processed ahead of time, as Spring Boot's build
 * plugins do, its generated sources are compiled, and it starts with {@code spring.aot.enabled=true}
 * on the CPU backend in a child JVM (the generated code calls the auto-configuration's
 * package-private bean methods, so it must share their class loader, as it does in a real build).
 * The starter's runtime hints reach the generated native-image metadata. Not built as a native
 * image here (no GraalVM).
 */
class GpuAotTests {

	private static Path work;

	private static Path sources;

	private static Path resources;

	private static Path classes;

	private static String classPath;

	@BeforeAll
	static void processAheadOfTime() throws Exception {
		work = Files.createTempDirectory("gpu-aot-");
		sources = work.resolve("sources");
		resources = work.resolve("resources");
		classes = work.resolve("classes");
		Settings settings = Settings.builder()
			.sourceOutput(sources)
			.resourceOutput(resources)
			.classOutput(classes)
			.groupId("dev.gpucompute")
			.artifactId("aot-test")
			.build();
		new SpringApplicationAotProcessor(AotApplication.class, settings,
				new String[] { "--spring.main.web-application-type=none", "--gpu.backend=cpu" })
			.process();
		classPath = testClassPath();
		List<String> generated;
		try (Stream<Path> files = Files.walk(sources)) {
			generated = files.filter((file) -> file.toString().endsWith(".java")).map(Path::toString).toList();
		}
		assertThat(generated).as("generated sources").isNotEmpty();
		JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
		List<String> arguments = new ArrayList<>(List.of("-d", classes.toString(), "-cp", classPath, "-proc:none",
				"-parameters", "-nowarn"));
		arguments.addAll(generated);
		assertThat(javac.run(null, null, null, arguments.toArray(String[]::new))).as("javac exit code").isZero();
	}

	@AfterAll
	static void deleteWork() throws IOException {
		if (work != null) {
			FileSystemUtils.deleteRecursively(work);
		}
	}

	@Test
	void theProcessedApplicationStartsWithAotEnabledAndLaunchesAKernel() throws Exception {
		Run run = start("--gpu.cpu.threads=1");
		assertThat(run.exitCode()).as(run.output()).isZero();
		assertThat(run.values()).as(run.output())
			.containsEntry("AOT", "true")
			.containsEntry("RESULT", "[2.0, 4.0, 6.0, 8.0]")
			.containsEntry("HEALTH", "UP,UP");
		assertThat(run.values().get("BACKEND")).isEqualTo("double_it@CPU");
	}

	@Test
	void theUnknownKeyCheckRunsInTheProcessedApplicationToo() throws Exception {
		Run run = start("--gpu.streams.max-sise=4");
		assertThat(run.exitCode()).as(run.output()).isNotZero();
		assertThat(run.output()).contains("APPLICATION FAILED TO START")
			.contains("gpu.streams.max-sise = 4")
			.contains("did you mean gpu.streams.max-size?");
	}

	@Test
	void theStartersHintsAreInTheGeneratedNativeImageMetadata() throws IOException {
		String metadata;
		try (Stream<Path> files = Files.walk(resources.resolve("META-INF/native-image"))) {
			StringBuilder all = new StringBuilder();
			for (Path file : files.filter(Files::isRegularFile).toList()) {
				all.append(Files.readString(file));
			}
			metadata = all.toString();
		}
		assertThat(metadata).contains("jcuda.Pointer")
			.contains("dev.gpucompute.cpu.NativeAllocator$LibC")
			.contains("dev.gpucompute.cuda.NvrtcLibrary$Api")
			.contains("dev.gpucompute.cpu.CpuBackendProvider");
		// JSON may escape the slashes.
		assertThat(metadata.replace("\\/", "/")).contains("\"gpu/kernels/**\"");
	}

	@Test
	void theRegistrarIsFoundAndRegistersWhatTheRuntimeReaches() throws Exception {
		List<RuntimeHintsRegistrar> registrars = SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
			.load(RuntimeHintsRegistrar.class);
		assertThat(registrars).hasAtLeastOneElementOfType(GpuRuntimeHints.class);
		RuntimeHints hints = new RuntimeHints();
		new GpuRuntimeHints().registerHints(hints, getClass().getClassLoader());
		assertThat(RuntimeHintsPredicates.resource().forResource("gpu/kernels/saxpy.cu")).accepts(hints);
		assertThat(RuntimeHintsPredicates.resource().forResource("META-INF/services/dev.gpucompute.spi.BackendProvider"))
			.accepts(hints);
		// The API reaches the runtime's entry points (public static methods) by name: each is kept.
		Class<?> engine = Class.forName(GpuRuntimeHints.RUNTIME_IMPLEMENTATION);
		int entryPoints = 0;
		for (java.lang.reflect.Method method : engine.getMethods()) {
			if (method.getDeclaringClass() == engine) {
				assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(method)).as(method.getName()).accepts(hints);
				entryPoints++;
			}
		}
		assertThat(entryPoints).isPositive();
		assertThat(RuntimeHintsPredicates.resource().forResource("lib/libJCudaDriver-12.6.0-linux-x86_64.so"))
			.accepts(hints);
		// Every provider ServiceLoader finds (named by the runtime's service file, so the test needs none of
		// the backends' classes) can be instantiated reflectively in a native image.
		List<String> providers = serviceProviders("META-INF/services/dev.gpucompute.spi.BackendProvider");
		assertThat(providers).contains("dev.gpucompute.cpu.CpuBackendProvider");
		for (String provider : providers) {
			assertThat(RuntimeHintsPredicates.reflection().onType(TypeReference.of(provider))).as(provider).accepts(hints);
		}
		assertThat(RuntimeHintsPredicates.reflection()
			.onType(dev.gpucompute.autoconfigure.actuate.GpuEndpoint.LeaseDescriptor.class)).accepts(hints);
		assertThat(RuntimeHintsPredicates.proxies().forInterfaces(TypeReference.of(GpuRuntimeHints.NVRTC_API)))
			.accepts(hints);
		assertThat(hints.jni().getTypeHint(jcuda.Pointer.class)).isNotNull()
			.satisfies((hint) -> assertThat(hint.getMemberCategories()).contains(MemberCategory.ACCESS_DECLARED_FIELDS));
		// Every JCuda class named is real (a typo would silently register nothing useful).
		for (String type : GpuRuntimeHints.JCUDA_JNI_TYPES) {
			assertThat(org.springframework.util.ClassUtils.isPresent(type, getClass().getClassLoader())).as(type).isTrue();
		}
		for (String type : GpuRuntimeHints.JNA_DIRECT_TYPES) {
			assertThat(org.springframework.util.ClassUtils.isPresent(type, getClass().getClassLoader())).as(type).isTrue();
		}
	}

	/** The class names listed in the service files of that name on this class path. */
	private List<String> serviceProviders(String resource) throws IOException {
		List<String> names = new ArrayList<>();
		for (URL url : java.util.Collections.list(getClass().getClassLoader().getResources(resource))) {
			try (var in = url.openStream()) {
				new String(in.readAllBytes(), StandardCharsets.UTF_8).lines()
					.map((line) -> line.replaceFirst("#.*", "").strip())
					.filter((line) -> !line.isEmpty())
					.forEach(names::add);
			}
		}
		return names;
	}

	private record Run(int exitCode, String output, Map<String, String> values) {
	}

	private static Run start(String... args) throws Exception {
		List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
				"-Dspring.aot.enabled=true", "-cp",
				classes + File.pathSeparator + resources + File.pathSeparator + classPath,
				AotApplication.class.getName(), "--spring.main.web-application-type=none", "--gpu.backend=cpu"));
		command.addAll(List.of(args));
		Path log = Files.createTempFile(work, "run", ".log");
		Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
		if (!process.waitFor(120, TimeUnit.SECONDS)) {
			process.destroyForcibly();
			throw new AssertionError("The application did not end within 120 s:\n" + Files.readString(log));
		}
		String output = Files.readString(log, StandardCharsets.UTF_8);
		Map<String, String> values = new java.util.HashMap<>();
		for (String line : output.split("\\R")) {
			int eq = line.indexOf('=');
			if (eq > 0 && line.substring(0, eq).matches("[A-Z]+")) {
				values.putIfAbsent(line.substring(0, eq), line.substring(eq + 1));
			}
		}
		return new Run(process.exitValue(), output, values);
	}

	/**
	 * This JVM's class path, with a manifest-only jar (Surefire's) expanded into the entries its
	 * {@code Class-Path} names, so that javac and the child JVM see the same classes.
	 */
	private static String testClassPath() throws IOException, URISyntaxException {
		Set<String> entries = new LinkedHashSet<>();
		for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
			entries.add(entry);
			if (entry.endsWith(".jar") && Files.isRegularFile(Path.of(entry))) {
				try (JarFile jar = new JarFile(entry)) {
					String manifestPath = (jar.getManifest() != null)
							? jar.getManifest().getMainAttributes().getValue("Class-Path") : null;
					if (manifestPath != null) {
						for (String element : manifestPath.trim().split("\\s+")) {
							URL url = Path.of(entry).toUri().resolve(element).toURL();
							entries.add(Path.of(url.toURI()).toString());
						}
					}
				}
			}
		}
		return String.join(File.pathSeparator, entries);
	}

}
