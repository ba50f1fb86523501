package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;

import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;

/**
 * End to end with three devices ({@code gpu.devices=all} on three CPU devices): a real Prometheus
 * server scrapes one series per device for every meter, labelled with the device's ordinal and UUID,
 * and the dashboard's row repeated per GPU, run for one GPU, shows that device only.
 *
 * <p>Uses the {@code prometheus} binary; skipped with the reason shown when it is absent, failed
 * instead when {@code PROMETHEUS_REQUIRED=1}.
 */
@ExtendWith(PrometheusBinary.class)
@SpringBootTest(classes = PrometheusDevicesEndToEndTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.cpu.devices=3", "gpu.devices=all", "gpu.streams.pool-size=1",
				"gpu.streams.max-size=3", "gpu.cpu.threads=1", "gpu.metrics.kernel-timing=all",
				"management.endpoints.web.exposure.include=prometheus" })
@DirtiesContext
class PrometheusDevicesEndToEndTests {

	@LocalServerPort
	private int appPort;

	@Autowired
	private GpuDevices devices;

	@TempDir
	Path dir;

	@Test
	void everyDeviceHasItsSeriesAndTheRepeatedRowShowsOneDevice() throws Exception {
		launch(1, 2);
		launch(2, 4);
		try (StreamLease held = this.devices.get(2).streams().acquire();
				PrometheusServer prometheus = PrometheusServer.start(this.dir, this.appPort)) {
			prometheus.awaitResults("gpu_streams_active{job=\"gpu-app\", gpu=\"2\"} == 1",
					"gpu_kernel_launches_total{gpu=\"2\", kernel=\"noop\", outcome=\"success\"} == 4");

			List<Map<String, Object>> pools = prometheus.result("gpu_streams_max{job=\"gpu-app\"}");
			assertThat(pools).extracting((series) -> labels(series).get("gpu") + "=" + labels(series).get("uuid"))
				.containsExactlyInAnyOrder("0=CPU-0", "1=CPU-1", "2=CPU-2");
			for (String gpu : List.of("0", "1", "2")) {
				long expected = switch (gpu) {
					case "1" -> 2;
					case "2" -> 4;
					default -> 0;
				};
				assertThat(value(prometheus, "gpu_kernel_launches_total{gpu=\"" + gpu
						+ "\", kernel=\"noop\", outcome=\"success\"}")).as("launches on device %s", gpu).isEqualTo(expected);
				assertThat(value(prometheus, "gpu_kernel_duration_seconds_count{gpu=\"" + gpu + "\", kernel=\"noop\"}"))
					.as("timed launches on device %s", gpu)
					.isEqualTo(expected);
			}

			// Every query of the repeated row answers for device 2 only, naming it by its UUID label (and by DCGM's
			// UUID where it copies it there), except those that sum the device away on purpose: per kernel, or
			// per histogram bucket. A query on another exporter's metric has no series here.
			List<String> perDevice = DashboardQueries.repeatedRowQueries("gpu");
			List<String> perDeviceSeries = perDevice.stream().filter((query) -> !sumsTheDeviceAway(query)).toList();
			assertThat(perDeviceSeries).as("queries of the repeated row with a series per device")
				.hasSizeGreaterThanOrEqualTo(5);
			for (String query : perDeviceSeries) {
				List<Map<String, Object>> result = prometheus.result(DashboardQueries.withGpu(query, "2"));
				if (DashboardQueries.metricNames(query).stream().anyMatch(DashboardQueries.EXTERNAL::contains)) {
					assertThat(result).as("%s: no %s exporter here", query, DashboardQueries.EXTERNAL).isEmpty();
					continue;
				}
				assertThat(result).as(query).isNotEmpty().allSatisfy((series) -> {
					Map<String, String> labels = labels(series);
					assertThat(labels).as("%s: %s", query, labels).containsEntry("uuid", "CPU-2");
					if (query.contains("\"UUID\"")) {
						assertThat(labels).as("%s: %s", query, labels).containsEntry("UUID", "CPU-2");
					}
				});
			}
			String leased = perDevice.stream().filter((query) -> query.contains("gpu_streams_active")).findFirst().orElseThrow();
			assertThat(values(prometheus, DashboardQueries.withGpu(leased, "2"))).containsExactly(1.0);
			assertThat(values(prometheus, DashboardQueries.withGpu(leased, "1"))).containsExactly(0.0);
		}
	}

	/** Whether a query aggregates by kernel or by histogram bucket, leaving no series per device. */
	private static boolean sumsTheDeviceAway(String query) {
		java.util.regex.Matcher by = java.util.regex.Pattern.compile("\\bby \\(([^)]*)\\)").matcher(query);
		while (by.find()) {
			List<String> labels = List.of(by.group(1).split("\\s*,\\s*"));
			if (labels.contains("kernel") || labels.contains("le")) {
				return true;
			}
		}
		return false;
	}

	private void launch(int ordinal, int times) {
		GpuLauncher launcher = this.devices.get(ordinal).launcher();
		Kernel noop = launcher.kernel("noop");
		for (int i = 0; i < times; i++) {
			launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
		}
		launcher.synchronize();
		Awaitility.await().until(() -> noop.stats().timedLaunches() == times);
	}

	@SuppressWarnings("unchecked")
	private static Map<String, String> labels(Map<String, Object> series) {
		return (Map<String, String>) series.get("metric");
	}

	private static double value(PrometheusServer prometheus, String promql) throws Exception {
		List<Double> values = values(prometheus, promql);
		assertThat(values).as(promql).hasSize(1);
		return values.get(0);
	}

	private static List<Double> values(PrometheusServer prometheus, String promql) throws Exception {
		return prometheus.result(promql)
			.stream()
			.map((series) -> Double.parseDouble((String) ((List<?>) series.get("value")).get(1)))
			.collect(Collectors.toList());
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		KernelSource noop() {
			return KernelSource.named("noop").params(ParamType.INT).cpu((block, args) -> {
			});
		}

	}

}
