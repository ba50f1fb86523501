package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import com.jayway.jsonpath.DocumentContext;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
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

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;

/**
 * End to end: a real Prometheus server scrapes the running application's
 * {@code /actuator/prometheus} every second; its HTTP API then returns the launch counter and the
 * pool gauges with the values the test produced, and every metric the Grafana dashboard queries is
 * in the scrape (and every dashboard query is valid PromQL for that server).
 *
 * <p>Uses the {@code prometheus} binary (Debian package {@code prometheus}); skipped with the reason
 * shown when it is absent, failed instead when {@code PROMETHEUS_REQUIRED=1}.
 */
@ExtendWith(PrometheusBinary.class)
@SpringBootTest(classes = PrometheusEndToEndTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.streams.pool-size=2", "gpu.streams.max-size=3", "gpu.cpu.threads=1",
				"gpu.metrics.kernel-timing=all", "management.endpoints.web.exposure.include=prometheus" })
@DirtiesContext
class PrometheusEndToEndTests {

	private static final int LAUNCHES = 5;

	private static final Duration PATIENCE = Duration.ofSeconds(60);

	@LocalServerPort
	private int appPort;

	@Autowired
	private GpuLauncher launcher;

	@Autowired
	private GpuContext context;

	@Autowired
	private dev.gpucompute.batch.GpuBatcher<Integer, Integer> echo;

	@TempDir
	Path dir;

	private PrometheusServer prometheus;

	private final List<StreamLease> leases = new ArrayList<>();

	@AfterEach
	void stop() {
		if (this.prometheus != null) {
			this.prometheus.close();
		}
		this.leases.forEach(StreamLease::close);
	}

	@Test
	void prometheusScrapesTheMetersTheDashboardUses() throws Exception {
		Kernel noop = this.launcher.kernel("noop");
		for (int i = 0; i < LAUNCHES; i++) {
			this.launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
		}
		this.launcher.currentStream().synchronize();
		Awaitility.await().atMost(PATIENCE).until(() -> noop.stats().timedLaunches() == LAUNCHES);
		// Two items through the batcher, before the pool is taken below.
		this.echo.submit(1).get(30, java.util.concurrent.TimeUnit.SECONDS);
		this.echo.submit(2).get(30, java.util.concurrent.TimeUnit.SECONDS);
		// A graph captured and replayed once, so that its timers have series.
		try (StreamLease lease = this.context.streams().acquire();
				dev.gpucompute.graph.GpuGraph graph = dev.gpucompute.graph.GpuGraphs.of(this.context)
					.capture("once", lease.stream(), () -> this.launcher.launch(noop, LaunchConfig.linear(1, 1), 1))) {
			graph.replay(lease.stream()).get(30, java.util.concurrent.TimeUnit.SECONDS);
		}
		// Lease the whole pool (it grows from 2 to its maximum of 3), then time out once.
		for (int i = 0; i < 3; i++) {
			this.leases.add(this.context.streams().acquire());
		}
		try {
			this.context.streams().acquire(Duration.ofMillis(10)).close();
			throw new AssertionError("the pool should have been exhausted");
		}
		catch (PoolExhaustedException expected) {
			// counted by gpu.streams.timeout
		}

		this.prometheus = PrometheusServer.start(this.dir, this.appPort);
		this.prometheus.awaitResults("up{job=\"gpu-app\"} == 1", "gpu_streams_active");

		String app = "{job=\"gpu-app\", gpu=\"0\", backend=\"cpu\", uuid=\"" + this.context.device().uuid() + "\"}";
		assertThat(this.prometheus.value("gpu_kernel_launches_total{kernel=\"noop\", outcome=\"success\"}"))
			.isEqualTo(LAUNCHES);
		assertThat(this.prometheus.value("gpu_kernel_launches_total{kernel=\"noop\", outcome=\"error\"}")).isZero();
		assertThat(this.prometheus.value("gpu_kernel_duration_seconds_count{kernel=\"noop\"}")).isEqualTo(LAUNCHES);
		assertThat(this.prometheus.value("gpu_streams_active" + app)).isEqualTo(3);
		assertThat(this.prometheus.value("gpu_streams_idle" + app)).isZero();
		assertThat(this.prometheus.value("gpu_streams_pending" + app)).isZero();
		assertThat(this.prometheus.value("gpu_streams_max" + app)).isEqualTo(3);
		assertThat(this.prometheus.value("gpu_streams_timeout_total" + app)).isEqualTo(1);
		assertThat(this.prometheus.value("gpu_memory_total_bytes" + app))
			.isEqualTo(this.context.device().totalMemoryBytes());

		// The graph's meters.
		assertThat(this.prometheus.value("gpu_graph_replays_total" + app)).isEqualTo(1);
		assertThat(this.prometheus.value("gpu_graph_captures_total{outcome=\"success\"}")).isEqualTo(1);
		assertThat(this.prometheus.value("gpu_graph_capture_seconds_count{graph=\"once\"}")).isEqualTo(1);

		// The batcher's meters, after two items in one batch or two.
		assertThat(this.prometheus.value("gpu_batch_wait_seconds_count{batcher=\"echo\"}")).isEqualTo(2);
		assertThat(this.prometheus.value("gpu_batch_queued{batcher=\"echo\"}")).isZero();
		assertThat(this.prometheus.value("gpu_batch_rejected_total{batcher=\"echo\"}")).isZero();
		assertThat(this.prometheus.value("gpu_batch_timeouts_total{batcher=\"echo\"}")).isZero();

		DashboardQueries dashboard = DashboardQueries.load();
		Set<String> scraped = this.prometheus.metricNames("{job=\"gpu-app\"}");
		Set<String> missing = new HashSet<>(dashboard.metricNames());
		missing.removeAll(DashboardQueries.EXTERNAL);
		missing.removeAll(scraped);
		assertThat(missing).as("dashboard metrics missing from the scrape").isEmpty();
		for (String query : dashboard.panelQueries()) {
			DocumentContext result = this.prometheus.query(DashboardQueries.withoutVariables(query));
			assertThat(result.read("$.status", String.class)).as(query).isEqualTo("success");
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

		@Bean
		KernelSource noop() {
			return KernelSource.named("noop").params(ParamType.INT).cpu((block, args) -> {
			});
		}

		@Bean
		dev.gpucompute.batch.GpuBatcher<Integer, Integer> echo(dev.gpucompute.autoconfigure.GpuBatchers batchers) {
			return batchers.create("echo", (batch) -> new java.util.ArrayList<>(batch.items()));
		}

	}

}
