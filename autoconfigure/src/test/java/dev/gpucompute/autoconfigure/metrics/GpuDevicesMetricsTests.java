package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * The meters of several devices ({@code gpu.devices=all} on three CPU devices): every {@code gpu.*}
 * meter once per device, tagged with the device's ordinal and UUID, each moved only by its own
 * device; with one device, exactly the meters of a single-device application.
 */
class GpuDevicesMetricsTests {

	/** DCGM exporter's {@code UUID} label, as nvidia-smi prints a device UUID. */
	private static final String DCGM_UUID = "GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withPropertyValues("gpu.backend=cpu", "gpu.cpu.devices=3", "gpu.streams.pool-size=1", "gpu.streams.max-size=2",
				"gpu.cpu.threads=1", "gpu.kernels.locations=", "gpu.metrics.kernel-timing=all")
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, GpuMetricsAutoConfiguration.class,
				MetricsAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
				CompositeMeterRegistryAutoConfiguration.class))
		.withUserConfiguration(KernelConfiguration.class);

	private static final List<String> DEVICE_METERS = List.of(GpuMeterNames.STREAMS_ACTIVE, GpuMeterNames.STREAMS_IDLE,
			GpuMeterNames.STREAMS_PENDING, GpuMeterNames.STREAMS_MAX, GpuMeterNames.STREAMS_UTILIZATION,
			GpuMeterNames.STREAMS_TIMEOUT, GpuMeterNames.STREAMS_ACQUIRE, GpuMeterNames.STREAMS_USAGE, GpuMeterNames.EVENTS_LIVE,
			GpuMeterNames.MEMORY_USED, GpuMeterNames.MEMORY_TOTAL, GpuMeterNames.MEMORY_CACHED, GpuMeterNames.STAGING_USED,
			GpuMeterNames.STAGING_BUDGET, GpuMeterNames.STAGING_PENDING, GpuMeterNames.STAGING_TIMEOUT, GpuMeterNames.KERNEL_DURATION,
			GpuMeterNames.KERNEL_LAUNCHES, GpuMeterNames.GRAPH_REPLAYS, GpuMeterNames.GRAPH_LIVE, GpuMeterNames.GRAPH_NODES,
			GpuMeterNames.GRAPH_CAPTURES, GpuMeterNames.GRAPH_UPDATES);

	@Test
	void everyMeterExistsOncePerDeviceWithItsOrdinalAndUuid() {
		this.runner.withPropertyValues("gpu.devices=all").run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			GpuDevices devices = context.getBean(GpuDevices.class);
			for (String name : DEVICE_METERS) {
				Set<String> gpus = registry.find(name).meters().stream().map((meter) -> meter.getId().getTag("gpu"))
					.collect(Collectors.toCollection(TreeSet::new));
				assertThat(gpus).as(name).containsExactly("0", "1", "2");
			}
			for (GpuContext gpu : devices.contexts()) {
				String ordinal = Integer.toString(gpu.device().ordinal());
				Tags device = Tags.of("gpu", ordinal, "uuid", gpu.device().uuid(), "backend", "cpu");
				assertThat(gpu.device().uuid()).isEqualTo("CPU-" + ordinal);
				for (String name : List.of(GpuMeterNames.STREAMS_ACTIVE, GpuMeterNames.STREAMS_ACQUIRE,
						GpuMeterNames.MEMORY_TOTAL, GpuMeterNames.EVENTS_LIVE)) {
					assertThat(registry.find(name).tags(device).meters()).as("%s of device %s", name, ordinal).hasSize(1);
				}
				// A start-up kernel has its series on every device from the start.
				assertThat(registry.find(GpuMeterNames.KERNEL_LAUNCHES).tags(device).tag("kernel", "noop").meters())
					.hasSize(2);
			}
		});
	}

	@Test
	void eachDevicesMetersMoveWithThatDeviceOnly() {
		this.runner.withPropertyValues("gpu.devices=all").run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			GpuDevices devices = context.getBean(GpuDevices.class);
			// Leases: the acquire and usage timers come from each device's own listener.
			try (StreamLease lease = devices.get(1).streams().acquire()) {
				assertThat(registry.get(GpuMeterNames.STREAMS_ACTIVE).tag("gpu", "1").gauge().value()).isEqualTo(1);
				assertThat(registry.get(GpuMeterNames.STREAMS_ACTIVE).tag("gpu", "0").gauge().value()).isZero();
			}
			assertThat(acquisitions(registry, "0")).isZero();
			assertThat(acquisitions(registry, "1")).isEqualTo(1);
			assertThat(acquisitions(registry, "2")).isZero();
			assertThat(registry.get(GpuMeterNames.STREAMS_USAGE).tag("gpu", "1").timer().count()).isEqualTo(1);
			// Launches and device time of a kernel on device 2.
			GpuLauncher launcher = devices.get(2).launcher();
			Kernel noop = launcher.kernel("noop");
			for (int i = 0; i < 3; i++) {
				launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
			}
			launcher.currentStream().synchronize();
			Awaitility.await().until(() -> noop.stats().timedLaunches() == 3);
			for (String gpu : List.of("0", "1", "2")) {
				double expected = gpu.equals("2") ? 3 : 0;
				assertThat(registry.get(GpuMeterNames.KERNEL_LAUNCHES).tags("gpu", gpu, "kernel", "noop", "outcome", "success")
					.functionCounter()
					.count()).as("launches on device %s", gpu).isEqualTo(expected);
				assertThat(registry.get(GpuMeterNames.KERNEL_DURATION).tags("gpu", gpu, "kernel", "noop").timer().count())
					.as("timed launches on device %s", gpu)
					.isEqualTo((long) expected);
			}
		});
	}

	@Test
	void oneDeviceHasExactlyTheMetersOfASingleDeviceApplication() {
		this.runner.run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			assertThat(context.getBean(GpuDevices.class).size()).isEqualTo(1);
			assertThat(context.getBean(MicrometerGpuListener.class).isBound()).isTrue();
			List<Meter> meters = registry.getMeters().stream().filter((meter) -> meter.getId().getName().startsWith("gpu."))
				.toList();
			assertThat(meters).allSatisfy((meter) -> {
				assertThat(meter.getId().getTag("gpu")).isEqualTo("0");
				assertThat(meter.getId().getTag("uuid")).isEqualTo("CPU-0");
			});
			// One meter per name, but twice (by outcome) the launch counter of the one kernel and the graph
			// captures and updates counters.
			assertThat(meters).hasSize(DEVICE_METERS.size() + 3);
			try (StreamLease lease = context.getBean(GpuContext.class).streams().acquire()) {
				assertThat(acquisitions(registry, "0")).isEqualTo(1);
			}
		});
	}

	@Test
	void cudaUuidIsTheTagAsDcgmExporterLabelsIt() {
		String uuid = "GPU-9af21c03-e677-0bd1-8f00-4511c27e3dff";
		DeviceInfo device = new DeviceInfo(Backend.CUDA, 3, "NVIDIA H100 80GB HBM3", uuid, "00000000:1B:00.0", "9.0", 132,
				80L << 30, "13.0", 1024, new Dim3(1024, 1024, 64), new Dim3(Integer.MAX_VALUE, 65535, 65535), 49152, 32);
		Tags tags = GpuMetrics.deviceTags(device);
		assertThat(tags.stream().filter((tag) -> tag.getKey().equals("uuid")).findFirst().orElseThrow().getValue())
			.isEqualTo(uuid)
			.matches(DCGM_UUID);
		assertThat(tags.stream().filter((tag) -> tag.getKey().equals("gpu")).findFirst().orElseThrow().getValue())
			.isEqualTo("3");
	}

	private static long acquisitions(MeterRegistry registry, String gpu) {
		return registry.get(GpuMeterNames.STREAMS_ACQUIRE).tag("gpu", gpu).timer().count();
	}

	@Configuration(proxyBeanMethods = false)
	static class KernelConfiguration {

		@Bean
		KernelSource noop() {
			return KernelSource.named("noop").params(ParamType.INT).cpu((block, args) -> {
			});
		}

	}

}
