package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.settings.KernelTiming;

/**
 * The shipped Grafana dashboard reads only metrics that the application exports (plus DCGM's GPU
 * utilisation, joined by UUID), and shows what an operator needs (streams, launches,
 * memory, batches, staging, graphs and the GPU's utilisation). Runs without a Prometheus server;
 * {@link PrometheusEndToEndTests} checks the same against a real one.
 */
class GrafanaDashboardTests {

	private static final Pattern SAMPLE_NAME = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)", Pattern.MULTILINE);

	@Test
	void metricNamesAreFoundInPromQl() {
		assertThat(DashboardQueries.metricNames(
				"histogram_quantile(0.99, sum by (kernel, le) (rate(foo_bucket{a=\"b\", c=~\"$gpu\"}[$__rate_interval])))"
						+ " and on (UUID) label_replace(bar{x=\"1\"}, \"UUID\", \"$1\", \"uuid\", \"(.+)\") / 100"))
			.containsExactlyInAnyOrder("foo_bucket", "bar");
	}

	@Test
	void everyDashboardMetricIsExportedByTheApplication() throws Exception {
		Set<String> exported = scrapedNames();
		Set<String> used = DashboardQueries.load().metricNames();
		assertThat(used).isNotEmpty();
		Set<String> ours = new TreeSet<>(used);
		ours.removeAll(DashboardQueries.EXTERNAL);
		assertThat(exported).containsAll(ours);
		assertThat(ours).allMatch((name) -> name.startsWith("gpu_"));
	}

	@Test
	void dashboardShowsWhatOperatorsNeed() throws Exception {
		Set<String> used = DashboardQueries.load().metricNames();
		assertThat(used).contains("gpu_streams_active", "gpu_streams_idle", "gpu_streams_pending", "gpu_streams_max",
				"gpu_streams_utilization", "gpu_kernel_launches_total", "gpu_kernel_duration_seconds_bucket",
				"gpu_streams_acquire_seconds_bucket", "gpu_streams_timeout_total", "gpu_memory_used_bytes",
				"gpu_memory_total_bytes", "gpu_events_live", "DCGM_FI_DEV_GPU_UTIL", "gpu_batch_size_items_bucket",
				"gpu_batch_wait_seconds_bucket", "gpu_batch_queued", "gpu_batch_rejected_total",
				"gpu_batch_timeouts_total", "gpu_staging_used_bytes", "gpu_staging_budget_bytes",
				"gpu_graph_replays_total", "gpu_graph_live", "gpu_graph_nodes", "gpu_graph_captures_total",
				"gpu_graph_updates_total", "gpu_graph_capture_seconds_sum", "gpu_graph_instantiate_seconds_sum");
		assertThat(DashboardQueries.load().panelQueries())
			.anySatisfy((query) -> assertThat(query).contains("DCGM_FI_DEV_GPU_UTIL").contains("on (UUID)")
				.contains("\"uuid\""));
	}

	@Test
	void panelUnitsMatchWhatTheQueriesCompute() throws Exception {
		String json = java.nio.file.Files.readString(DashboardQueries.DASHBOARD);
		// Device seconds per second: a ratio, not a duration.
		assertThat(com.jayway.jsonpath.JsonPath.<java.util.List<String>>read(json,
				"$.panels[?(@.title == 'Device time per second by kernel')].fieldConfig.defaults.unit"))
			.containsExactly("percentunit");
		// Quantiles and means of timers are durations.
		assertThat(com.jayway.jsonpath.JsonPath.<java.util.List<String>>read(json,
				"$.panels[?(@.title in ['Device time percentiles by kernel', 'Stream acquire wait', 'Lease hold time', "
						+ "'Batch queue wait by batcher', 'Capture and instantiation time by graph'])].fieldConfig.defaults.unit"))
			.containsExactly("s", "s", "s", "s", "s");
		// Batch sizes are item counts.
		assertThat(com.jayway.jsonpath.JsonPath.<java.util.List<String>>read(json,
				"$.panels[?(@.title == 'Batch size by batcher')].fieldConfig.defaults.unit"))
			.containsExactly("short");
	}

	@Test
	void everyApplicationSeriesFollowsTheInstanceAndGpuVariables() throws Exception {
		// So that the GPU variable selects devices everywhere, and a row repeated per GPU shows that GPU only.
		Pattern selector = Pattern.compile("\\b(gpu_[a-z_]+)(\\{[^}]*\\})?");
		for (String query : DashboardQueries.load().panelQueries()) {
			Matcher matcher = selector.matcher(query);
			while (matcher.find()) {
				assertThat(matcher.group(2)).as("%s in %s", matcher.group(1), query)
					.isNotNull()
					.contains("instance=~\"$instance\"")
					.contains("gpu=~\"$gpu\"");
			}
		}
	}

	@Test
	void aRowRepeatsForEverySelectedGpuWithThatDevicesPanels() throws Exception {
		String json = java.nio.file.Files.readString(DashboardQueries.DASHBOARD);
		java.util.List<java.util.Map<String, Object>> panels = com.jayway.jsonpath.JsonPath.read(json, "$.panels[*]");
		int row = -1;
		for (int i = 0; i < panels.size(); i++) {
			if ("row".equals(panels.get(i).get("type")) && "gpu".equals(panels.get(i).get("repeat"))) {
				row = i;
			}
		}
		assertThat(row).as("a row repeated by the gpu variable").isNotNegative();
		assertThat((String) panels.get(row).get("title")).contains("$gpu");
		// Grafana repeats only for a variable that can hold several values.
		assertThat(com.jayway.jsonpath.JsonPath.<java.util.List<Boolean>>read(json,
				"$.templating.list[?(@.name == 'gpu')].multi")).containsExactly(true);
		java.util.List<java.util.Map<String, Object>> perDevice = new java.util.ArrayList<>();
		for (int i = row + 1; i < panels.size() && !"row".equals(panels.get(i).get("type")); i++) {
			perDevice.add(panels.get(i));
		}
		assertThat(perDevice).hasSizeGreaterThanOrEqualTo(4)
			.allSatisfy((panel) -> assertThat((String) panel.get("title")).contains("$gpu"));
		String queries = com.jayway.jsonpath.JsonPath.parse(perDevice).read("$[*].targets[*].expr").toString();
		assertThat(queries).contains("gpu_streams_active", "gpu_kernel_launches_total", "gpu_memory_used_bytes",
				"gpu_streams_utilization", "DCGM_FI_DEV_GPU_UTIL and on (UUID)");
		// The device is named by its UUID in the legends, as DCGM exporter names it.
		assertThat(com.jayway.jsonpath.JsonPath.parse(perDevice).<java.util.List<String>>read("$[*].targets[*].legendFormat"))
			.anySatisfy((legend) -> assertThat(legend).contains("{{uuid}}"))
			.anySatisfy((legend) -> assertThat(legend).contains("{{UUID}}"));
	}

	/** The metric names of a Prometheus scrape of a CPU context with one launched, timed kernel and a batcher. */
	private static Set<String> scrapedNames() {
		PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
		// What Spring Boot applies to Prometheus registries, and the docs ask plain-Java users to add.
		registry.config().meterFilter(new GpuHistogramBuckets());
		MicrometerGpuListener listener = new MicrometerGpuListener();
		try (GpuContext context = GpuContext.builder()
			.backend(Backend.CPU)
			.poolSize(1)
			.cpuThreads(1)
			.kernelTiming(KernelTiming.ALL)
			.listener(listener)
			.open()) {
			context.launcher().load(GpuMetricsTests.ADD_ONE);
			new GpuMetrics(context, listener).bindTo(registry);
			dev.gpucompute.batch.GpuBatcher<Integer, Integer> batcher = dev.gpucompute.batch.GpuBatcher
				.builder(context, (dev.gpucompute.batch.Batch<Integer> batch) -> batch.items())
				.name("scraped")
				.build();
			batcher.submit(1).join();
			batcher.close();
			// A graph captured and replayed, so that its timers (by graph) have series.
			try (dev.gpucompute.StreamLease lease = context.streams().acquire();
					dev.gpucompute.graph.GpuGraph graph = dev.gpucompute.graph.GpuGraphs.of(context)
						.capture("scraped", lease.stream(), () -> {
						})) {
				graph.launch(lease.stream());
				lease.stream().synchronize();
			}
			String scrape = registry.scrape();
			Set<String> names = new TreeSet<>();
			Matcher matcher = SAMPLE_NAME.matcher(scrape);
			while (matcher.find()) {
				names.add(matcher.group(1));
			}
			return names;
		}
	}

}
