package dev.gpucompute.autoconfigure.diagnostics;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.GpuProperties;
import dev.gpucompute.autoconfigure.QuietOutputExtension;
import dev.gpucompute.autoconfigure.UnknownGpuPropertiesException;
import dev.gpucompute.autoconfigure.UnknownGpuPropertiesException.UnknownProperty;

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
	void everyKnownKeyIsAcceptedInEachFormItCanBeWritten() {
		this.runner
			.withPropertyValues("gpu.enabled=true", "gpu.device=0", "gpu.devices[0]=0", "gpu.cpu.devices=1",
					"gpu.streams.maxSize=4", "gpu.streams.acquire_timeout=1s", "gpu.streams.default-stream=legacy",
					"gpu.streams.leak-detection-threshold=1m", "gpu.kernels.locations[0]=classpath:kernels/empty/",
					"gpu.kernels.compile-options=-lineinfo", "gpu.kernels.cache-dir=/tmp/gpu-kernels-h23",
					"gpu.metrics.kernel-timing=off", "gpu.metrics.observe-launches=false",
					"gpu.shutdown.drain-timeout=1s", "gpu.unknown-properties=fail")
			.run((context) -> assertThat(context).hasNotFailed());
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
			assertThat(context.getBean(GpuProperties.class).getStreams().getPoolSize()).isEqualTo(2);
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

	/** What issue 21's gpu.batching.<name>.* looks like: a map of groups in its own properties class. */
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
