package dev.gpucompute.autoconfigure;

import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.Backend;
import dev.gpucompute.spi.Backends;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's "Using it" section, tried as a new user would: its Java snippet is compiled as it
 * stands (imports included) and run as a bean of a web application configured with exactly the
 * README's {@code application.properties}; then {@code /actuator/gpu} and
 * {@code /actuator/prometheus} must answer.
 */
class ReadmeTests {

	private static final Path README = Path.of("../README.md");

	@Test
	void usingItSnippetCompilesRunsAndShowsTheGpuInActuator(@TempDir Path classes) throws Exception {
		String section = section(Files.readString(README), "## Using it");
		String java = block(section, "java");
		List<String> properties = block(section, "properties").lines()
			.filter((line) -> !line.isBlank() && !line.startsWith("#"))
			.toList();
		assertThat(properties).as("README properties").isNotEmpty();

		Class<?> service = compile(java, classes);
		List<String> args = new ArrayList<>(properties.stream().map((property) -> "--" + property).toList());
		args.add("--server.port=0");
		SpringApplication application = new SpringApplication(App.class, service);
		try (ConfigurableApplicationContext context = application.run(args.toArray(new String[0]))) {
			// The snippet's kernel computes y = a * x + y (on the CPU backend here, on CUDA on a GPU machine).
			Object saxpy = context.getBean(service);
			Method apply = service.getMethod("apply", float.class, float[].class, float[].class);
			float[] y = (float[]) apply.invoke(saxpy, 2f, new float[] { 1, 2, 3, 4, 5 }, new float[] { 10, 10, 10, 10, 10 });
			assertThat(y).containsExactly(12, 14, 16, 18, 20);

			int port = ((WebServerApplicationContext) context).getWebServer().getPort();
			HttpResponse<String> gpu = get(port, "/actuator/gpu");
			assertThat(gpu.statusCode()).isEqualTo(200);
			// The README sets no backend: auto, CUDA where a device is usable (a GPU machine), else the CPU.
			String expected = Backends.select(Backend.CUDA, 0).availability().available() ? "CUDA" : "CPU";
			assertThat(JsonPath.parse(gpu.body()).read("$.backend.backend", String.class)).isEqualTo(expected);
			HttpResponse<String> prometheus = get(port, "/actuator/prometheus");
			assertThat(prometheus.statusCode()).isEqualTo(200);
			assertThat(prometheus.body()).contains("gpu_streams_active{")
				.contains("gpu_kernel_launches_total{")
				.contains("kernel=\"saxpy\"");
			HttpResponse<String> health = get(port, "/actuator/health");
			assertThat(JsonPath.parse(health.body()).read("$.components.gpu.status", String.class)).isEqualTo("UP");
		}
	}

	@Test
	void usingItDeclaresWhatTheApplicationAboveRunsWith() throws IOException {
		String xml = block(section(Files.readString(README), "## Using it"), "xml");
		List<String> artifacts = Pattern.compile("<artifactId>([^<]+)</artifactId>").matcher(xml).results()
			.map((result) -> result.group(1))
			.toList();
		// Without a web server an application copied from the README starts and exits at once, and
		// nothing answers on /actuator/gpu, which the test above reads over HTTP.
		assertThat(artifacts).as("the README's dependencies").contains("gpu-compute-spring-boot-starter",
				"spring-boot-starter-webmvc", "spring-boot-starter-actuator", "micrometer-registry-prometheus");
	}

	private static HttpResponse<String> get(int port, String path) throws IOException, InterruptedException {
		return HttpClient.newHttpClient()
			.send(HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).GET().build(),
					HttpResponse.BodyHandlers.ofString());
	}

	/** From a heading to the next heading of the same level. */
	private static String section(String markdown, String heading) {
		int start = markdown.indexOf("\n" + heading + "\n");
		assertThat(start).as("README section %s", heading).isNotNegative();
		int end = markdown.indexOf("\n## ", start + heading.length() + 1);
		return markdown.substring(start, (end < 0) ? markdown.length() : end);
	}

	/** The only fenced block of the given language in the section. */
	private static String block(String section, String language) {
		Matcher matcher = Pattern.compile("```" + language + "\\n(.*?)\\n```", Pattern.DOTALL).matcher(section);
		assertThat(matcher.find()).as("a ```%s block", language).isTrue();
		String block = matcher.group(1);
		assertThat(matcher.find()).as("only one ```%s block", language).isFalse();
		return block;
	}

	/** Compiles the snippet (a class in the default package) against this test class path. */
	private static Class<?> compile(String java, Path classes) throws IOException, ClassNotFoundException {
		Matcher name = Pattern.compile("(?m)^public class (\\w+)").matcher(java);
		assertThat(name.find()).as("the snippet declares a public class").isTrue();
		Path source = classes.resolve(name.group(1) + ".java");
		Files.writeString(source, java);
		// Surefire runs the tests from a manifest-only jar; it states the real class path here.
		String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
		JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
		int result = compiler.run(null, null, null, "-classpath", classPath, "-d", classes.toString(), "--release", "17",
				source.toString());
		assertThat(result).as("javac exit code for the README snippet").isZero();
		ClassLoader loader = new URLClassLoader(new URL[] { classes.toUri().toURL() }, ReadmeTests.class.getClassLoader());
		return Class.forName(name.group(1), true, loader);
	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class App {

	}

}
