package dev.gpucompute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;

import org.springframework.boot.convert.ApplicationConversionService;
import org.springframework.core.convert.ConversionService;
import org.springframework.util.unit.DataSize;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.settings.CopySettings;
import dev.gpucompute.settings.CpuSettings;
import dev.gpucompute.settings.DefaultStreamMode;
import dev.gpucompute.settings.GraphSettings;
import dev.gpucompute.settings.KernelSettings;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.settings.MetricsSettings;
import dev.gpucompute.settings.ShutdownSettings;
import dev.gpucompute.settings.StreamSettings;

/**
 * Every {@code gpu.*} property's default is the runtime's: the default written on the
 * {@link GpuProperties} field (which the configuration metadata, and so the IDE, shows) equals the
 * default of the runtime's settings record that the property maps onto, and unbound properties map
 * onto the records' {@code DEFAULTS}. A property whose default the starter chooses differently, or
 * that only the starter has, is listed with the reason; a new property that is in none of the lists
 * fails the test.
 */
class GpuPropertiesDefaultsTests {

	private static final Path METADATA = Path.of("target/classes/META-INF/spring-configuration-metadata.json");

	private static final ConversionService CONVERSION = ApplicationConversionService.getSharedInstance();

	/** Properties whose default is the runtime's, with the runtime's default. */
	private static final Map<String, Object> RUNTIME_DEFAULTS = new LinkedHashMap<>();

	static {
		GpuContextBuilder.Settings runtime = GpuContext.builder().settings();
		RUNTIME_DEFAULTS.put("gpu.device", 0);
		RUNTIME_DEFAULTS.put("gpu.streams.pool-size", StreamSettings.DEFAULT_POOL_SIZE);
		RUNTIME_DEFAULTS.put("gpu.streams.max-size", runtime.streams().maxSize());
		RUNTIME_DEFAULTS.put("gpu.streams.acquire-timeout", runtime.streams().acquireTimeout());
		RUNTIME_DEFAULTS.put("gpu.streams.default-stream", runtime.streams().defaultStream());
		RUNTIME_DEFAULTS.put("gpu.copies.staging-budget", DataSize.ofBytes(runtime.copies().stagingBudget()));
		RUNTIME_DEFAULTS.put("gpu.copies.staging-timeout", runtime.copies().stagingTimeout());
		RUNTIME_DEFAULTS.put("gpu.cpu.devices", runtime.cpu().devices());
		RUNTIME_DEFAULTS.put("gpu.kernels.compile-options", runtime.kernelSettings().compileOptions());
		RUNTIME_DEFAULTS.put("gpu.metrics.kernel-timing", runtime.metrics().kernelTiming());
		RUNTIME_DEFAULTS.put("gpu.shutdown.drain-timeout", runtime.shutdown().drainTimeout());
		RUNTIME_DEFAULTS.put("gpu.graphs.cache-size", GraphSettings.DEFAULTS.cacheSize());
	}

	/** Properties left unset ({@code null}) unless configured: the runtime computes their default. */
	private static final Set<String> RUNTIME_COMPUTES = Set.of("gpu.cpu.threads", "gpu.streams.priority-limits");

	/** Properties whose default the starter chooses differently from the runtime, and why. */
	private static final Map<String, String> STARTER_CHOOSES = Map.of(
			// A service holds a lease for the length of a request; one held for a minute is a leak worth a log line.
			// The runtime leaves detection off: capturing a stack per lease costs a plain program for nothing.
			"gpu.streams.leak-detection-threshold", "60s",
			// A service restarts often and should not compile its kernels again; the runtime keeps no disk cache
			// unless asked.
			"gpu.kernels.cache-dir", "the system temp directory",
			// 'auto' is the runtime's null backend: choose CUDA when usable.
			"gpu.backend", "auto");

	/** Properties only the starter has. */
	private static final Set<String> STARTER_ONLY = Set.of("gpu.enabled", "gpu.devices", "gpu.unknown-properties",
			"gpu.kernels.locations", "gpu.metrics.observe-launches", "gpu.problem-details.enabled",
			"gpu.problem-details.retry-after", "gpu.batching");

	@Test
	void everyPropertyIsAccountedFor() throws IOException {
		Set<String> accounted = new TreeSet<>(RUNTIME_DEFAULTS.keySet());
		accounted.addAll(RUNTIME_COMPUTES);
		accounted.addAll(STARTER_CHOOSES.keySet());
		accounted.addAll(STARTER_ONLY);
		assertThat(new TreeSet<>(metadataDefaults().keySet())).isEqualTo(accounted);
	}

	@Test
	void theDefaultTheIdeShowsIsTheRuntimes() throws IOException {
		Map<String, Object> shown = metadataDefaults();
		RUNTIME_DEFAULTS.forEach((name, runtimeDefault) -> {
			Object value = shown.get(name);
			assertThat(value).as("the metadata's default of %s", name).isNotNull();
			Object converted = (value instanceof List<?> list) ? list
					: CONVERSION.convert(value, runtimeDefault.getClass());
			assertThat(converted).as("the default of %s", name).isEqualTo(runtimeDefault);
		});
		RUNTIME_COMPUTES.forEach((name) -> assertThat(shown.get(name)).as(name).isNull());
		assertThat(shown.get("gpu.streams.leak-detection-threshold")).isEqualTo("60s");
	}

	@Test
	void unboundPropertiesMapOntoTheRuntimesDefaults() {
		GpuProperties properties = new GpuProperties();
		assertThat(GpuSettingsMapping.streams(properties.getStreams()))
			.isEqualTo(StreamSettings.DEFAULTS.withLeakDetectionThreshold(Duration.ofSeconds(60)));
		assertThat(GpuSettingsMapping.copies(properties.getCopies())).isEqualTo(CopySettings.DEFAULTS);
		assertThat(GpuSettingsMapping.cpu(properties.getCpu())).isEqualTo(CpuSettings.DEFAULTS);
		assertThat(GpuSettingsMapping.kernels(properties.getKernels()))
			.isEqualTo(KernelSettings.DEFAULTS.withCacheDir(GpuSettingsMapping.DEFAULT_KERNEL_CACHE));
		assertThat(GpuSettingsMapping.shutdown(properties.getShutdown())).isEqualTo(ShutdownSettings.DEFAULTS);
		assertThat(GpuSettingsMapping.metrics(properties.getMetrics())).isEqualTo(MetricsSettings.DEFAULTS);
		assertThat(GpuSettingsMapping.graphs(properties.getGraphs())).isEqualTo(GraphSettings.DEFAULTS);
		assertThat(GpuSettingsMapping.batcher(new GpuProperties.Batcher())).isEqualTo(GpuBatcher.Settings.DEFAULTS);
		assertThat(properties.getStreams().getDefaultStream()).isEqualTo(DefaultStreamMode.PER_THREAD);
		assertThat(properties.getMetrics().getKernelTiming()).isEqualTo(KernelTiming.SAMPLED);
	}

	/** The {@code gpu.*} properties of the metadata, each with its default ({@code null} where none is shown). */
	private static Map<String, Object> metadataDefaults() throws IOException {
		List<Map<String, Object>> properties = JsonPath.parse(Files.readString(METADATA)).read("$.properties[*]");
		Map<String, Object> defaults = new LinkedHashMap<>();
		for (Map<String, Object> property : properties) {
			String name = (String) property.get("name");
			if (name.startsWith("gpu.")) {
				defaults.put(name, property.get("defaultValue"));
			}
		}
		return defaults;
	}

}
