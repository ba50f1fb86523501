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
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.actuate.GpuHealthContributorAutoConfiguration;
import dev.gpucompute.autoconfigure.actuate.GpuHealthIndicator;
import dev.gpucompute.autoconfigure.metrics.GpuMetrics;
import dev.gpucompute.autoconfigure.metrics.GpuMetricsAutoConfiguration;

/**
 * The starter on a CUDA device: {@code auto} chooses CUDA and says why, health is UP with the
 * device's figures, the meters carry the device's UUID and move with launches and buffers, and a
 * sticky error turns health DOWN (in a child JVM, since it poisons the process's CUDA context).
 * Skipped without a device; failed when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(RequiresCuda.class)
class GpuStarterCudaGpuTests {

	private static final KernelSource ADD_ONE = KernelSource.named("add_one")
		.params(ParamType.INT, ParamType.BUFFER)
		.cuda("""
				extern "C" __global__ void add_one(int n, int* x) {
				  int i = blockIdx.x * blockDim.x + threadIdx.x;
				  if (i < n) x[i] += 1;
				}""");

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withPropertyValues("gpu.backend=auto", "gpu.streams.pool-size=2", "gpu.kernels.locations=")
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, GpuMetricsAutoConfiguration.class,
				GpuHealthContributorAutoConfiguration.class));

	@Test
	void autoChoosesCudaHealthIsUpAndTheMetersFollowTheDevice() {
		this.runner.run((context) -> {
			GpuContext gpu = context.getBean(GpuContext.class);
			assertThat(gpu.backend()).isEqualTo(Backend.CUDA);
			assertThat(gpu.backendReason()).startsWith("auto: CUDA device found (").contains(gpu.device().name());
			Health health = context.getBean(GpuHealthIndicator.class).health();
			assertThat(health.getStatus()).isEqualTo(Status.UP);
			assertThat(health.getDetails()).containsEntry("backend", "CUDA").containsKey("memoryFreeBytes");

			MeterRegistry registry = context.getBean(MeterRegistry.class);
			context.getBean(GpuMetrics.class).bindTo(registry);
			String uuid = gpu.device().uuid();
			assertThat(registry.get(GpuMetrics.MEMORY_TOTAL).tag("uuid", uuid).gauge().value())
				.isEqualTo(gpu.device().totalMemoryBytes());
			GpuLauncher launcher = context.getBean(GpuLauncher.class);
			double usedBefore = registry.get(GpuMetrics.MEMORY_USED).gauge().value();
			int n = 1 << 20;
			try (DeviceBuffer buffer = launcher.upload(new int[n])) {
				assertThat(registry.get(GpuMetrics.MEMORY_USED).gauge().value()).isEqualTo(usedBefore + 4.0 * n);
				launcher.launch(ADD_ONE, LaunchConfig.linear(n, 256), n, buffer);
				int[] back = new int[n];
				buffer.download(back, launcher.currentStream()).join();
				assertThat(back[0]).isEqualTo(1);
				assertThat(back[n - 1]).isEqualTo(1);
			}
			launcher.synchronize();
			assertThat(registry.get(GpuMetrics.MEMORY_CACHED).gauge().value()).as("the freed buffer stays cached")
				.isGreaterThanOrEqualTo(4.0 * n);
			assertThat(registry.get("gpu.kernel.launches").tag("kernel", "add_one").tag("outcome", "success").counter().count())
				.isEqualTo(1);
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
