package dev.gpucompute.autoconfigure.diagnostics;

import java.beans.PropertyDescriptor;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.beans.BeanUtils;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.GpuProperties;
import dev.gpucompute.autoconfigure.QuietOutputExtension;
import dev.gpucompute.autoconfigure.UnknownGpuPropertiesException;
import dev.gpucompute.autoconfigure.UnknownGpuPropertiesException.UnknownProperty;
import dev.gpucompute.autoconfigure.UnknownPropertiesPolicy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * Keys under {@code gpu.} that nothing binds fail start-up (or are logged, or ignored, as
 * {@code gpu.unknown-properties} says), named with where they were set and the nearest known key;
 * keys bound by nested groups, lists, maps and other {@code gpu.*} properties classes are known.
 */
@ExtendWith(QuietOutputExtension.class)
public class UnknownGpuPropertiesTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
		.withPropertyValues("gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=1");

	@Test
	void theMistakesOfTheIssueFailStartUpEachWithWhereItWasSetAndTheNearestKey(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run("--spring.config.location=classpath:failure-analysis/misspelled-keys.properties"));
		String file = "class path resource [failure-analysis/misspelled-keys.properties]";
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("5 keys under gpu. are not a gpu-compute property")
			.contains("gpu.backnd = cpu (" + file + " - 2:12): did you mean gpu.backend?")
			.contains("gpu.streams.max-sise = 4 (" + file + " - 3:22): did you mean gpu.streams.max-size?")
			.contains("gpu.stream.pool-size = 2 (" + file + " - 4:22): did you mean gpu.streams.pool-size?")
			.contains("gpu.kernels.location = classpath:gpu/kernels/ (" + file
					+ " - 5:22): did you mean gpu.kernels.locations?")
			.contains("gpu.metrics.kernel-timings = all (" + file + " - 6:28): did you mean gpu.metrics.kernel-timing?")
			.contains("set gpu.unknown-properties=warn")
			.doesNotContain("gpu.cpu.threads = 1");
	}

	@Test
	void aKeyFarFromAnyKnownOneGetsNoSuggestionButAKeyInTheWrongGroupDoes() {
		this.runner.withPropertyValues("gpu.colour=blue", "gpu.threads=4").run((context) -> {
			List<UnknownProperty> unknown = unknown(context.getStartupFailure());
			assertThat(unknown).extracting(UnknownProperty::name).containsExactly("gpu.colour", "gpu.threads");
			assertThat(unknown.get(0).suggestion()).isNull();
			assertThat(unknown.get(1).suggestion()).isEqualTo("gpu.cpu.threads");
			FailureAnalysis analysis = new UnknownGpuPropertiesFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).startsWith("2 keys under gpu. are not a gpu-compute property")
				.contains("gpu.colour = blue (\"gpu.colour\" from property source \"test\")")
				.contains("gpu.threads = 4 (\"gpu.threads\" from property source \"test\"): did you mean gpu.cpu.threads?");
			assertThat(analysis.getAction()).startsWith("Correct the names (the nearest known key is shown above)");
		});
	}

	@Test
	void everyKnownKeyIsAcceptedInEachFormItCanBeWritten(@TempDir Path cacheDir) throws Exception {
		// Every gpu.* key of the starter's configuration metadata (entries of its maps and lists included),
		// set at once in each spelling relaxed binding reads from a properties file, with lists both whole and
		// by index: none is reported unknown, and each binds (the non-default values below come through).
		List<Key> keys = metadataKeys(cacheDir);
		assertThat(keys).extracting(Key::name)
			.as("keys the hand-picked list of this test once missed")
			.contains("gpu.copies.staging-budget", "gpu.copies.staging-timeout", "gpu.problem-details.enabled",
					"gpu.problem-details.retry-after", "gpu.streams.priority-limits.normal",
					"gpu.batching.search.max-batch-size");
		for (Form form : Form.values()) {
			for (boolean indexed : new boolean[] { false, true }) {
				List<String> pairs = new ArrayList<>();
				for (Key key : keys) {
					pairs.addAll(key.written(form, indexed));
				}
				new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
					.withPropertyValues(pairs.toArray(new String[0]))
					.run((context) -> {
						assertThat(context).as("%s, lists %s: %s", form, indexed ? "by index" : "whole", pairs)
							.hasNotFailed();
						GpuProperties properties = context.getBean(GpuProperties.class);
						assertThat(properties.getUnknownProperties()).isEqualTo(UnknownPropertiesPolicy.FAIL);
						assertThat(properties.getStreams().getPriorityLimits())
							.containsExactlyInAnyOrderEntriesOf(Map.of(StreamPriority.NORMAL, 2, StreamPriority.HIGH, 1));
						assertThat(properties.getBatching()).containsOnlyKeys("search");
						assertThat(properties.getKernels().getCompileOptions()).containsExactly("-lineinfo");
						assertThat(properties.getKernels().getCacheDir()).isEqualTo(cacheDir);
						assertThat(properties.getCpu().getThreads()).isEqualTo(1);
					});
			}
		}
	}

	/** How a key is spelled: as the metadata has it, in camel case, or with underscores. */
	private enum Form {

		KEBAB, CAMEL, UNDERSCORE;

		String element(String element) {
			return switch (this) {
				case KEBAB -> element;
				case UNDERSCORE -> element.replace('-', '_');
				case CAMEL -> {
					StringBuilder camel = new StringBuilder();
					boolean upper = false;
					for (char c : element.toCharArray()) {
						if (c == '-') {
							upper = true;
						}
						else {
							camel.append(upper ? Character.toUpperCase(c) : c);
							upper = false;
						}
					}
					yield camel.toString();
				}
			};
		}

	}

	/**
	 * A key and a value it accepts: its elements (the properties' own, then a map's entry, which no
	 * spelling changes), and one value or a list of them.
	 */
	private record Key(List<String> elements, String entry, List<String> values, boolean list) {

		String name() {
			return String.join(".", this.elements) + ((this.entry != null) ? "." + this.entry : "");
		}

		List<String> written(Form form, boolean indexed) {
			String name = this.elements.stream().map(form::element).collect(java.util.stream.Collectors.joining("."))
					+ ((this.entry != null) ? "." + this.entry : "");
			if (!this.list) {
				return List.of(name + "=" + this.values.get(0));
			}
			if (!indexed) {
				return List.of(name + "=" + String.join(",", this.values));
			}
			List<String> pairs = new ArrayList<>();
			for (int i = 0; i < this.values.size(); i++) {
				pairs.add(name + "[" + i + "]=" + this.values.get(i));
			}
			return pairs;
		}

	}

	/**
	 * The gpu.* keys of the metadata generated from {@link GpuProperties}, each with a value: its default
	 * where that starts the test's context on the CPU backend, else one of the test's. A key without
	 * either fails the test, so a new property is tried as soon as it exists.
	 */
	@SuppressWarnings("unchecked")
	private static List<Key> metadataKeys(Path cacheDir) throws Exception {
		Map<String, List<String>> samples = Map.of("gpu.backend", List.of("cpu"), "gpu.cpu.threads", List.of("1"),
				"gpu.devices", List.of("0"), "gpu.kernels.locations", List.of("classpath:kernels/empty/"),
				"gpu.kernels.compile-options", List.of("-lineinfo"), "gpu.kernels.cache-dir",
				List.of(cacheDir.toString()));
		String own = GpuProperties.class.getProtectionDomain().getCodeSource().getLocation().toString();
		String json = null;
		for (URL url : Collections.list(GpuProperties.class.getClassLoader()
			.getResources("META-INF/spring-configuration-metadata.json"))) {
			if (url.toString().startsWith(own) || url.toString().startsWith("jar:" + own)) {
				try (InputStream in = url.openStream()) {
					json = new String(in.readAllBytes(), StandardCharsets.UTF_8);
				}
			}
		}
		assertThat(json).as("the starter's generated metadata beside %s", own).isNotNull();
		List<Key> keys = new ArrayList<>();
		for (Object entry : (List<Object>) JsonParserFactory.getJsonParser().parseMap(json).get("properties")) {
			Map<String, Object> property = (Map<String, Object>) entry;
			String name = (String) property.get("name");
			if (!name.startsWith("gpu.")) {
				continue;
			}
			String type = String.valueOf(property.get("type"));
			List<String> elements = List.of(name.split("\\."));
			Object defaultValue = property.get("defaultValue");
			if (name.equals("gpu.batching")) {
				// A map of groups: every key of a group, with the group's defaults.
				GpuProperties.Batcher defaults = new GpuProperties.Batcher();
				for (PropertyDescriptor descriptor : BeanUtils.getPropertyDescriptors(GpuProperties.Batcher.class)) {
					if (descriptor.getWriteMethod() != null) {
						String element = descriptor.getName().replaceAll("([A-Z])", "-$1").toLowerCase(Locale.ROOT);
						keys.add(new Key(List.of("gpu", "batching"), "search." + element,
								List.of(String.valueOf(descriptor.getReadMethod().invoke(defaults))), false));
					}
				}
			}
			else if (name.equals("gpu.streams.priority-limits")) {
				keys.add(new Key(elements, "normal", List.of("2"), false));
				keys.add(new Key(elements, "high", List.of("1"), false));
			}
			else if (type.startsWith("java.util.Map<")) {
				throw new AssertionError("no entries to try for the map " + name + ": add them");
			}
			else {
				boolean list = type.startsWith("java.util.List<");
				List<String> values = samples.get(name);
				if (values == null && defaultValue instanceof List<?> defaults && !defaults.isEmpty()) {
					values = defaults.stream().map(String::valueOf).toList();
				}
				else if (values == null && defaultValue != null && !(defaultValue instanceof List<?>)) {
					values = List.of(String.valueOf(defaultValue));
				}
				assertThat(values).as("a value for %s (no default): add one to the samples", name).isNotNull();
				keys.add(new Key(elements, null, values, list));
			}
		}
		return keys;
	}

	@Test
	void aListSetWholeInOneSourceOverridesItsElementsInAnother() {
		this.runner.withPropertyValues("gpu.kernels.locations[0]=classpath:kernels/empty/",
				"gpu.kernels.locations[1]=classpath:kernels/empty/")
			.withSystemProperties("gpu.kernels.locations=classpath:kernels/empty/")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void keysOfAnotherGpuPropertiesClassIncludingMapEntriesAreKnownAndTheirTyposAreNot() {
		ApplicationContextRunner batching = this.runner.withUserConfiguration(BatchingConfiguration.class);
		batching.withPropertyValues("gpu.batching.search.max-batch-size=64", "gpu.batching.search.max-delay=2ms",
				"gpu.batching.bulk.max-batch-size=512", "gpu.batching.bulk.labels.team=search")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(Batching.class).getBatching()).containsOnlyKeys("search", "bulk");
			});
		batching.withPropertyValues("gpu.batching.search.max-batch-size=64", "gpu.batching.search.max-batch-sise=32")
			.run((context) -> assertThat(unknown(context.getStartupFailure())).singleElement()
				.satisfies((property) -> {
					assertThat(property.name()).isEqualTo("gpu.batching.search.max-batch-sise");
					assertThat(property.suggestion()).isEqualTo("gpu.batching.search.max-batch-size");
				}));
	}

	@Test
	void keysDeclaredByTheConfigurationMetadataAreKnownIncludingEntriesOfItsMaps() {
		// Declared in this module's test metadata only: a key bound by code, and gpu.test.labels, a map
		// that no bean binds, so only the metadata speaks for its entries.
		this.runner.withPropertyValues("gpu.test.bound-by-code=x", "gpu.test.labels.anything=1")
			.run((context) -> assertThat(context).hasNotFailed());
		this.runner.withPropertyValues("gpu.test.bound-by-cod=x")
			.run((context) -> assertThat(unknown(context.getStartupFailure())).singleElement()
				.extracting(UnknownProperty::suggestion)
				.isEqualTo("gpu.test.bound-by-code"));
	}

	@Test
	void aValueThatCannotBeConvertedIsReportedAsABadValueNotAsAnUnknownKey() {
		this.runner.withPropertyValues("gpu.backend=rocm", "gpu.streams.max-size=4").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(new UnknownGpuPropertiesFailureAnalyzer().analyze(context.getStartupFailure())).isNull();
			assertThat(new InvalidGpuPropertyValueFailureAnalyzer().analyze(context.getStartupFailure()).getDescription())
				.startsWith("gpu.backend is set to 'rocm'");
		});
	}

	@Test
	void warnLogsTheUnknownKeysAndStarts(CapturedOutput output) {
		this.runner.withPropertyValues("gpu.unknown-properties=warn", "gpu.streams.max-sise=4").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(GpuContext.class).streams().maxSize()).isEqualTo(32);
		});
		assertThat(output).contains("Ignoring 1 gpu.* key that no gpu-compute property binds (gpu.unknown-properties=warn):")
			.contains("gpu.streams.max-sise = 4 (\"gpu.streams.max-sise\" from property source \"test\"): did you mean "
					+ "gpu.streams.max-size?");
	}

	@Test
	void ignoreNeitherFailsNorLogs(CapturedOutput output) {
		this.runner.withPropertyValues("gpu.unknown-properties=ignore", "gpu.streams.max-sise=4")
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output).doesNotContain("gpu.streams.max-sise");
	}

	@Test
	void aBadPolicyIsABadValue() {
		this.runner.withPropertyValues("gpu.unknown-properties=loud").run((context) -> {
			FailureAnalysis analysis = new InvalidGpuPropertyValueFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).contains("gpu.unknown-properties is set to 'loud'")
				.contains("fail, warn, ignore");
		});
	}

	@Test
	void environmentVariablesAreNotChecked() {
		this.runner.withSystemProperties().withInitializer((context) -> context.getEnvironment()
			.getPropertySources()
			.addFirst(new org.springframework.core.env.SystemEnvironmentPropertySource(
					org.springframework.core.env.StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
					Map.of("GPU_DEVICE_ORDINAL", "0"))))
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void withTheGpuDisabledNothingIsChecked() {
		this.runner.withPropertyValues("gpu.enabled=false", "gpu.backnd=cpu")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void poolSizeFollowsTheMaximumWhenOnlyTheMaximumIsSet() {
		ApplicationContextRunner runner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
			.withPropertyValues("gpu.backend=cpu", "gpu.cpu.threads=1");
		runner.withPropertyValues("gpu.streams.max-size=2").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(GpuProperties.class).getStreams().getPoolSize()).as("left unset").isNull();
			assertThat(context.getBean(GpuContext.class).streams().stats().size()).isEqualTo(2);
		});
		runner.withPropertyValues("gpu.streams.max-size=64")
			.run((context) -> assertThat(context.getBean(GpuContext.class).streams().stats().size()).isEqualTo(8));
		runner.withPropertyValues("gpu.streams.max-size=2", "gpu.streams.pool-size=0")
			.run((context) -> assertThat(context.getBean(GpuContext.class).streams().stats().size()).isZero());
		runner.withPropertyValues("gpu.streams.max-size=2", "gpu.streams.pool-size=3").run((context) -> assertThat(
				new InvalidGpuPropertiesFailureAnalyzer().analyze(context.getStartupFailure()).getDescription())
			.startsWith("gpu.streams.pool-size (3) is larger than gpu.streams.max-size (2)"));
	}

	private static List<UnknownProperty> unknown(Throwable failure) {
		assertThat(failure).as("start-up failure").isNotNull();
		Throwable cause = failure;
		while (cause != null && !(cause instanceof UnknownGpuPropertiesException)) {
			cause = cause.getCause();
		}
		assertThat(cause).as("cause of %s", failure).isInstanceOf(UnknownGpuPropertiesException.class);
		return ((UnknownGpuPropertiesException) cause).properties();
	}

	private static void run(String... args) {
		SpringApplication application = new SpringApplication(EmptyApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.run(args).close();
	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class EmptyApplication {

	}

	/** What the batcher's gpu.batching.<name>.* looks like: a map of groups in its own properties class. */
	@Configuration(proxyBeanMethods = false)
	@EnableConfigurationProperties(Batching.class)
	static class BatchingConfiguration {

	}

	@ConfigurationProperties("gpu")
	public static class Batching {

		private final Map<String, Batcher> batching = new java.util.LinkedHashMap<>();

		public Map<String, Batcher> getBatching() {
			return this.batching;
		}

	}

	public static class Batcher {

		private int maxBatchSize = 32;

		private java.time.Duration maxDelay = java.time.Duration.ofMillis(1);

		private final Map<String, String> labels = new java.util.HashMap<>();

		public int getMaxBatchSize() {
			return this.maxBatchSize;
		}

		public void setMaxBatchSize(int maxBatchSize) {
			this.maxBatchSize = maxBatchSize;
		}

		public java.time.Duration getMaxDelay() {
			return this.maxDelay;
		}

		public void setMaxDelay(java.time.Duration maxDelay) {
			this.maxDelay = maxDelay;
		}

		public Map<String, String> getLabels() {
			return this.labels;
		}

	}

}
