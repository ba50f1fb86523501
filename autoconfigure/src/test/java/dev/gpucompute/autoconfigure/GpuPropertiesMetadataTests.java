package dev.gpucompute.autoconfigure;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checks the configuration metadata that the build generates from {@link GpuProperties} (with
 * {@code additional-spring-configuration-metadata.json} merged in): every {@code gpu.*} property of
 * the contract is there with a description and its default, and the closed value sets have hints;
 * the Actuator switches are documented too, and the auto-configuration metadata is generated.
 */
class GpuPropertiesMetadataTests {

	/** The contract (docs/spring.md, "Properties"): property and default as the metadata states it. */
	private static final Map<String, Object> DEFAULTS = new LinkedHashMap<>();

	static {
		DEFAULTS.put("gpu.enabled", true);
		DEFAULTS.put("gpu.backend", "auto");
		DEFAULTS.put("gpu.device", 0);
		DEFAULTS.put("gpu.streams.pool-size", 8);
		DEFAULTS.put("gpu.streams.max-size", 32);
		DEFAULTS.put("gpu.streams.acquire-timeout", "30s");
		DEFAULTS.put("gpu.streams.default-stream", "per-thread");
		DEFAULTS.put("gpu.streams.leak-detection-threshold", "60s");
		DEFAULTS.put("gpu.kernels.locations", List.of("classpath:gpu/kernels/"));
		DEFAULTS.put("gpu.kernels.compile-options", List.of());
		DEFAULTS.put("gpu.metrics.kernel-timing", "sampled");
		DEFAULTS.put("gpu.metrics.observe-launches", false);
		DEFAULTS.put("gpu.shutdown.drain-timeout", "30s");
		DEFAULTS.put("gpu.copies.staging-budget", "1GB");
		DEFAULTS.put("gpu.copies.staging-timeout", "30s");
		DEFAULTS.put("gpu.cpu.devices", 1);
		DEFAULTS.put("gpu.unknown-properties", "fail");
		DEFAULTS.put("gpu.problem-details.enabled", true);
		DEFAULTS.put("gpu.problem-details.retry-after", "1s");
		DEFAULTS.put("gpu.graphs.cache-size", 16);
	}

	/** Defaults computed at start-up: no constant in the metadata, the description says what they are. */
	private static final Map<String, String> COMPUTED_DEFAULTS = Map.of("gpu.kernels.cache-dir", "system temp directory",
			"gpu.cpu.threads", "number of available processors", "gpu.devices", "the one device gpu.device names",
			// Maps: their keys are the application's (priorities, batcher names); the description names the defaults.
			"gpu.streams.priority-limits", "no limit but the pool's maximum by default", "gpu.batching",
			"max-batch-size (default 64)");

	private static final Path METADATA = Path.of("target/classes/META-INF/spring-configuration-metadata.json");

	@Test
	void everyGpuPropertyHasADescriptionAndItsDefault() throws IOException {
		List<Map<String, Object>> properties = JsonPath.parse(Files.readString(METADATA)).read("$.properties[*]");
		Map<String, Map<String, Object>> gpu = new LinkedHashMap<>();
		for (Map<String, Object> property : properties) {
			String name = (String) property.get("name");
			if (name.startsWith("gpu.")) {
				gpu.put(name, property);
			}
		}
		assertThat(gpu.keySet()).containsExactlyInAnyOrderElementsOf(
				concat(DEFAULTS.keySet().stream().toList(), COMPUTED_DEFAULTS.keySet().stream().toList()));
		gpu.forEach((name, property) -> {
			assertThat((String) property.get("description")).as("description of %s", name).hasSizeGreaterThan(30);
			// gpu.graphs.* comes from its own group class, bound as a nested part of GpuProperties.
			assertThat((String) property.get("sourceType")).as(name).satisfiesAnyOf(
					(type) -> assertThat(type).startsWith(GpuProperties.class.getName()),
					(type) -> assertThat(type).isEqualTo(GpuGraphProperties.class.getName()));
		});
		DEFAULTS.forEach((name, value) -> assertThat(gpu.get(name).get("defaultValue")).as("default of %s", name)
			.isEqualTo(value));
		COMPUTED_DEFAULTS.forEach((name, text) -> {
			assertThat(gpu.get(name)).as(name).doesNotContainKey("defaultValue");
			assertThat((String) gpu.get(name).get("description")).as(name).containsIgnoringCase(text);
		});
	}

	@Test
	void closedValueSetsHaveDescribedHints() throws IOException {
		String json = Files.readString(METADATA);
		assertThat(hintValues(json, "gpu.backend")).containsExactly("auto", "cuda", "cpu");
		assertThat(hintValues(json, "gpu.streams.default-stream")).containsExactly("per-thread", "legacy");
		assertThat(hintValues(json, "gpu.metrics.kernel-timing")).containsExactly("off", "sampled", "all");
		assertThat(hintValues(json, "gpu.devices")).containsExactly("all");
		assertThat(hintValues(json, "gpu.unknown-properties")).containsExactly("fail", "warn", "ignore");
		List<String> descriptions = JsonPath.parse(json).read("$.hints[?(@.name =~ /gpu\\..*/)].values[*].description");
		assertThat(hintValues(json, "gpu.streams.priority-limits.keys")).containsExactly("normal", "high");
		assertThat(descriptions).hasSize(14).allSatisfy((description) -> assertThat(description).isNotBlank());
	}

	@Test
	void actuatorSwitchesAreInTheMetadata() throws IOException {
		List<Map<String, Object>> properties = JsonPath.parse(Files.readString(METADATA)).read("$.properties[*]");
		for (String name : List.of("management.health.gpu.enabled", "management.health.gpu-streams.enabled",
				"management.info.gpu.enabled")) {
			assertThat(properties).as(name).anySatisfy((property) -> {
				assertThat(property).containsEntry("name", name)
					.containsEntry("type", "java.lang.Boolean")
					.containsEntry("defaultValue", true);
				assertThat((String) property.get("description")).startsWith("Whether to enable the GPU ");
			});
		}
	}

	@Test
	void autoConfigurationMetadataLetsSpringBootSkipClassesThatAreMissing() throws IOException {
		// Written by spring-boot-autoconfigure-processor; Spring Boot reads it to filter auto-configurations
		// by @ConditionalOnClass without loading them.
		Properties metadata = new Properties();
		try (var in = Files.newInputStream(Path.of("target/classes/META-INF/spring-autoconfigure-metadata.properties"))) {
			metadata.load(in);
		}
		List<String> imports = Files
			.readAllLines(Path.of(
					"target/classes/META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports"))
			.stream()
			.filter((line) -> !line.isBlank() && !line.startsWith("#"))
			.toList();
		assertThat(imports).hasSizeGreaterThanOrEqualTo(6);
		for (String autoConfiguration : imports) {
			assertThat(metadata.getProperty(autoConfiguration + ".ConditionalOnClass")).as(autoConfiguration)
				.contains("dev.gpucompute.");
		}
		assertThat(metadata.getProperty("dev.gpucompute.autoconfigure.GpuAutoConfiguration.ConditionalOnClass"))
			.isEqualTo("dev.gpucompute.GpuContext");
		assertThat(metadata.getProperty("dev.gpucompute.autoconfigure.metrics.GpuMetricsAutoConfiguration.ConditionalOnClass"))
			.contains("io.micrometer.core.instrument.MeterRegistry");
		assertThat(metadata.getProperty("dev.gpucompute.autoconfigure.metrics.GpuMetricsAutoConfiguration.AutoConfigureAfter"))
			.contains("dev.gpucompute.autoconfigure.GpuAutoConfiguration");
	}

	private static List<String> hintValues(String json, String name) {
		return JsonPath.parse(json).read("$.hints[?(@.name == '" + name + "')].values[*].value");
	}

	private static List<String> concat(List<String> a, List<String> b) {
		return java.util.stream.Stream.concat(a.stream(), b.stream()).toList();
	}

}
