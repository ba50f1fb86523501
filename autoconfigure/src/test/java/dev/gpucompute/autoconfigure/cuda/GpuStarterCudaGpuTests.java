package dev.gpucompute.autoconfigure.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuStarterChecks;
import dev.gpucompute.autoconfigure.actuate.GpuHealthIndicator;
import dev.gpucompute.autoconfigure.metrics.GpuMeterNames;

/**
 * The starter on a CUDA device: {@code auto} chooses CUDA and says why, {@code cuda} set explicitly
 * runs there too, health is UP with the device's figures, the meters carry the device's UUID and move
 * with launches and buffers (the checks of {@link GpuStarterChecks}, which {@code GpuStarterTests}
 * runs on the CPU backend in CI), the freed buffer stays cached, and a sticky error turns health DOWN
 * (in a child JVM, since it poisons the process's CUDA context). Skipped without a device; failed
 * when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(RequiresCuda.class)
class GpuStarterCudaGpuTests {

	@Test
	void autoChoosesCudaHealthIsUpAndTheMetersFollowTheDevice() {
		GpuStarterChecks.runner("auto").run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.backendReason()).startsWith("auto: CUDA device found (").contains(gpu.device().name());
			// Shared with GpuStarterTests, which runs them on the CPU backend in CI.
			GpuStarterChecks.healthIsUpAndTheMetersFollowTheDevice(context, Backend.CUDA);
			// CUDA's stream-ordered allocator keeps the freed 4 MiB buffer (the CPU backend frees it).
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			assertThat(registry.get(GpuMeterNames.MEMORY_CACHED).gauge().value()).as("the freed buffer stays cached")
				.isGreaterThanOrEqualTo(4.0 * (1 << 20));
		});
	}

	@Test
	void cudaRequestedExplicitlyRunsOnTheDeviceAndSaysSo() {
		// gpu.backend=cuda as written (GpuAutoConfigurationTests checks its failure without a driver).
		GpuStarterChecks.runner("cuda").run((context) -> {
			assertThat(context).hasNotFailed();
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.backend()).isEqualTo(Backend.CUDA);
			assertThat(gpu.backendReason()).isEqualTo("CUDA backend requested");
			assertThat(gpu.device().ordinal()).isZero();
			assertThat(gpu.isHealthy()).isTrue();
		});
	}

	@Test
	void healthGoesDownAfterAStickyError() throws Exception {
		Map<String, String> report = runProbe();
		assertThat(report).doesNotContainKey("UNEXPECTED");
		assertThat(report.get("BEFORE")).isEqualTo("UP");
		assertThat(report.get("SYNC")).isEqualTo("KernelLaunchException");
		assertThat(report.get("AFTER")).isEqualTo("DOWN");
		assertThat(report.get("REASON")).contains("CUDA context is unusable", "write_out_of_bounds");
	}

	/**
	 * Runs {@link StickyHealthProbe} in a child JVM whose class path is made of the code sources of
	 * the classes it needs, not of the launcher's {@code java.class.path}.
	 */
	private static Map<String, String> runProbe() throws Exception {
		Set<String> entries = new LinkedHashSet<>();
		for (String name : List.of(StickyHealthProbe.class.getName(), GpuHealthIndicator.class.getName(),
				GpuContext.class.getName(), "org.springframework.boot.health.contributor.AbstractHealthIndicator",
				"org.springframework.util.Assert", "org.apache.commons.logging.LogFactory", "org.slf4j.LoggerFactory",
				"org.slf4j.simple.SimpleServiceProvider",
				"jcuda.Pointer", "com.sun.jna.Native", "org.jspecify.annotations.Nullable")) {
			try {
				Class<?> type = Class.forName(name, false, GpuStarterCudaGpuTests.class.getClassLoader());
				entries.add(Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
			}
			catch (ClassNotFoundException ex) {
				// not on this class path (an optional logging binding)
			}
		}
		var natives = GpuStarterCudaGpuTests.class.getClassLoader().getResource("lib/libJCudaDriver-12.6.0-linux-x86_64.so");
		if (natives != null) {
			String url = natives.toString();
			entries.add(Path.of(new java.net.URI(url.substring(4, url.indexOf("!/")))).toString());
		}
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		Path log = Files.createTempFile("sticky-health-probe", ".log");
		try {
			Process process = new ProcessBuilder(java, "-cp", String.join(File.pathSeparator, entries),
					StickyHealthProbe.class.getName()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
			if (!process.waitFor(120, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				throw new AssertionError("The probe did not finish within 120 s:\n" + Files.readString(log));
			}
			String output = Files.readString(log, StandardCharsets.UTF_8);
			Map<String, String> report = new HashMap<>();
			for (String line : output.split("\\R")) {
				int eq = line.indexOf('=');
				if (eq > 0 && line.substring(0, eq).matches("[A-Z_]+")) {
					report.putIfAbsent(line.substring(0, eq), line.substring(eq + 1));
				}
			}
			assertThat(report).as("probe output:\n%s", output).containsKeys("BEFORE", "AFTER");
			return report;
		}
		finally {
			Files.deleteIfExists(log);
		}
	}

}
