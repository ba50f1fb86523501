package dev.gpucompute.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCache;
import dev.gpucompute.autoconfigure.GpuBatchers;
import dev.gpucompute.batch.GpuBatcher;

/**
 * The {@code gpu} endpoint, health and info contributors over HTTP, in a running application on
 * the CPU backend.
 */
@SpringBootTest(classes = GpuActuatorWebTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.streams.pool-size=2", "gpu.streams.max-size=4", "gpu.cpu.threads=1",
				"gpu.metrics.kernel-timing=all", "management.endpoints.web.exposure.include=gpu,health,info",
				"management.endpoint.health.show-details=always", "gpu.batching.echo.max-batch-size=8",
				"gpu.batching.echo.timeout=2s", "gpu.batching.echo.priority=high" })
class GpuActuatorWebTests {

	private static final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private GpuLauncher launcher;

	@Autowired
	private GpuContext context;

	@Autowired
	private Echo echo;

	@Test
	void wholeReport() throws Exception {
		Kernel noop = this.launcher.kernel("noop");
		long before = noop.stats().launches();
		for (int i = 0; i < 3; i++) {
			this.launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
		}
		this.launcher.currentStream().synchronize();
		// Timed launches take events and give them back once their timing is read: then the figures hold still.
		org.awaitility.Awaitility.await().until(() -> noop.stats().timedLaunches() == noop.stats().launches());
		EventRegistry.EventStats events = this.context.events().stats();
		HttpResponse<String> response = get("/actuator/gpu");
		assertThat(response.statusCode()).isEqualTo(200);
		DocumentContext json = JsonPath.parse(response.body());
		assertThat(json.read("$.backend.backend", String.class)).isEqualTo("CPU");
		assertThat(json.read("$.backend.healthy", Boolean.class)).isTrue();
		assertThat(json.read("$.backend.kernelTiming", String.class)).isEqualTo("ALL");
		assertThat(json.read("$.device.ordinal", Integer.class)).isZero();
		assertThat(json.read("$.device.uuid", String.class)).isEqualTo(this.context.device().uuid());
		assertThat(json.read("$.streams.minSize", Integer.class)).isEqualTo(2);
		assertThat(json.read("$.streams.maxSize", Integer.class)).isEqualTo(4);
		assertThat(events.created()).as("events the timed launches took").isPositive();
		assertThat(json.read("$.events.live", Integer.class)).isEqualTo(events.live());
		assertThat(json.read("$.events.created", Long.class)).isEqualTo(events.created());
		assertThat(json.read("$.events.destroyed", Long.class)).isEqualTo(events.destroyed());
		assertThat(json.read("$.kernels.noop.launches", Long.class)).isEqualTo(before + 3);
		assertThat(json.read("$.kernels.noop.errors", Long.class)).isZero();
		assertThat(json.read("$.memory.totalBytes", Long.class)).isEqualTo(this.context.device().totalMemoryBytes());
	}

	@Test
	void backendSelector() throws Exception {
		DocumentContext json = getJson("/actuator/gpu/backend");
		assertThat(json.read("$.backend", String.class)).isEqualTo("CPU");
		assertThat(json.read("$.reason", String.class)).isEqualTo(this.context.backendReason());
		assertThat(json.read("$.defaultStream", String.class)).isEqualTo("PER_THREAD");
	}

	@Test
	void deviceSelector() throws Exception {
		DocumentContext json = getJson("/actuator/gpu/device");
		assertThat(json.read("$.name", String.class)).isEqualTo(this.context.device().name());
		assertThat(json.read("$.maxBlockDim.x", Integer.class)).isEqualTo(this.context.device().maxBlockDim().x());
	}

	@Test
	void streamsSelectorShowsLeasesAndPerStreamBusyShare() throws Exception {
		try (StreamLease lease = this.context.streams().acquire()) {
			DocumentContext json = getJson("/actuator/gpu/streams");
			assertThat(json.read("$.active", Integer.class)).isEqualTo(1);
			assertThat(json.read("$.acquisitions", Long.class)).isPositive();
			List<Map<String, Object>> streams = json.read("$.streams");
			assertThat(streams).hasSize(json.read("$.size", Integer.class));
			assertThat(streams).filteredOn((stream) -> Boolean.TRUE.equals(stream.get("leased")))
				.singleElement()
				.satisfies((stream) -> assertThat(stream.get("name")).isEqualTo(lease.stream().name()));
			assertThat(streams).allSatisfy((stream) -> assertThat(stream).containsKey("busyShare"));
		}
		assertThat(getJson("/actuator/gpu/streams").read("$.active", Integer.class)).isZero();
	}

	@Test
	void eventsSelector() throws Exception {
		DocumentContext json = getJson("/actuator/gpu/events");
		assertThat(json.read("$.created", Long.class)).isGreaterThanOrEqualTo(json.read("$.destroyed", Long.class));
		assertThat(json.read("$.live", Integer.class)).isEqualTo(
				json.read("$.inUse", Integer.class) + json.read("$.cached", Integer.class));
	}

	@Test
	void kernelsSelectorShowsDeviceTime() throws Exception {
		Kernel noop = this.launcher.kernel("noop");
		this.launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
		this.launcher.currentStream().synchronize();
		org.awaitility.Awaitility.await().until(() -> noop.stats().timedLaunches() == noop.stats().launches());
		DocumentContext json = getJson("/actuator/gpu/kernels");
		assertThat(json.read("$.noop.launches", Long.class)).isEqualTo(noop.stats().launches());
		assertThat(json.read("$.noop.timedLaunches", Long.class)).isEqualTo(noop.stats().timedLaunches());
		assertThat(json.read("$.noop.deviceTimeNanos", Long.class)).isEqualTo(noop.stats().deviceTime().toNanos());
	}

	@Test
	void batchersSelectorShowsEachBatchersSettingsAndFigures() throws Exception {
		GpuBatcher<Integer, Integer> echo = this.echo.batcher();
		long before = echo.stats().submitted();
		echo.submit(5).get(30, java.util.concurrent.TimeUnit.SECONDS);
		DocumentContext json = getJson("/actuator/gpu/batchers");
		assertThat(json.read("$.echo.maxBatchSize", Integer.class)).isEqualTo(8);
		assertThat(json.read("$.echo.maxQueued", Integer.class)).isEqualTo(1024);
		assertThat(json.read("$.echo.priority", String.class)).isEqualTo("HIGH");
		assertThat(json.read("$.echo.timeoutNanos", Long.class)).isEqualTo(2_000_000_000L);
		assertThat(json.read("$.echo.maxQueueDelayNanos", Long.class)).isZero();
		assertThat(json.read("$.echo.maxConcurrentBatches", Integer.class)).isEqualTo(1);
		assertThat(json.read("$.echo.stats.submitted", Long.class)).isEqualTo(before + 1);
		assertThat(json.read("$.echo.stats.queued", Integer.class)).isZero();
		assertThat(json.read("$.echo.stats.name", String.class)).isEqualTo("echo");
		assertThat(getJson("/actuator/gpu").read("$.batchers.echo.maxBatchSize", Integer.class)).isEqualTo(8);
	}

	@Test
	void graphsSelectorShowsTheLiveGraphsAndTheCaches() throws Exception {
		GpuGraphs graphs = GpuGraphs.of(this.context);
		Kernel noop = this.launcher.kernel("noop");
		try (StreamLease lease = this.context.streams().acquire();
				GpuGraph graph = graphs.capture("twice", lease.stream(), () -> {
					this.launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
					this.launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
				}); GraphCache<Integer> cache = graphs.cache("by-size", 3)) {
			graph.launch(lease.stream());
			cache.launch(1, lease.stream(), (size) -> this.launcher.launch(noop, LaunchConfig.linear(size, 1), 1));
			cache.launch(1, lease.stream(), (size) -> this.launcher.launch(noop, LaunchConfig.linear(size, 1), 1));
			lease.stream().synchronize();
			DocumentContext json = getJson("/actuator/gpu/graphs");
			assertThat(json.read("$.stats.live", Integer.class)).isEqualTo(2);
			assertThat(json.read("$.stats.nodes", Long.class)).isEqualTo(3);
			assertThat(json.read("$.live[0].name", String.class)).isEqualTo("twice");
			assertThat(json.read("$.live[0].nodes", Integer.class)).isEqualTo(2);
			assertThat(json.read("$.live[0].replays", Long.class)).isEqualTo(1);
			assertThat(json.read("$.caches.by-size.maxSize", Integer.class)).isEqualTo(3);
			assertThat(json.read("$.caches.by-size.stats.hits", Long.class)).isEqualTo(1);
			assertThat(json.read("$.caches.by-size.stats.misses", Long.class)).isEqualTo(1);
		}
		assertThat(getJson("/actuator/gpu/graphs").read("$.stats.live", Integer.class)).isZero();
	}

	@Test
	void memorySelector() throws Exception {
		MemoryInfo before = this.context.memory();
		try (DeviceBuffer buffer = this.launcher.allocate(1 << 18, ElementType.FLOAT)) {
			DocumentContext json = getJson("/actuator/gpu/memory");
			assertThat(json.read("$.totalBytes", Long.class)).isEqualTo(this.context.device().totalMemoryBytes());
			assertThat(json.read("$.usedBytes", Long.class)).as("the 1 MiB buffer held")
				.isEqualTo(before.usedBytes() + (1 << 20));
			assertThat(json.read("$.liveBuffers", Long.class)).isEqualTo(before.liveBuffers() + 1);
			assertThat(json.read("$.cachedBytes", Long.class)).as("the CPU backend caches nothing").isZero();
		}
		assertThat(getJson("/actuator/gpu/memory").read("$.usedBytes", Long.class)).as("freed")
			.isEqualTo(before.usedBytes());
	}

	@Test
	void oneDeviceKeepsTheSingleDeviceShapeAndHasTheDeviceSelectorsToo() throws Exception {
		Map<String, Object> whole = getJson("/actuator/gpu").read("$");
		assertThat(whole).containsOnlyKeys("backend", "device", "streams", "leases", "events", "kernels", "memory",
				"batchers", "graphs");
		assertThat(getJson("/actuator/gpu/leases").read("$.length()", Integer.class)).as("nothing leased").isZero();
		Map<String, Object> devices = getJson("/actuator/gpu/devices").read("$");
		assertThat(devices).containsOnlyKeys("0");
		DocumentContext device = getJson("/actuator/gpu/devices/0");
		assertThat(device.read("$.device.uuid", String.class)).isEqualTo(this.context.device().uuid());
		assertThat(getJson("/actuator/gpu/devices/0/streams").read("$.maxSize", Integer.class)).isEqualTo(4);
		assertThat(get("/actuator/gpu/devices/1").statusCode()).isEqualTo(404);
		Map<String, Object> health = getJson("/actuator/health/gpu").read("$");
		assertThat(health).doesNotContainKey("components");
		Map<String, Object> info = getJson("/actuator/info").read("$.gpu");
		assertThat(info).containsKey("uuid").doesNotContainKey("devices");
	}

	@Test
	void unknownPartIsNotFound() throws Exception {
		assertThat(get("/actuator/gpu/nonsense").statusCode()).isEqualTo(404);
	}

	@Test
	void endpointIsReadOnly() throws Exception {
		HttpRequest post = HttpRequest.newBuilder(uri("/actuator/gpu"))
			.POST(HttpRequest.BodyPublishers.noBody())
			.build();
		assertThat(http.send(post, HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(405);
	}

	@Test
	void healthIsUpWithDetails() throws Exception {
		HttpResponse<String> response = get("/actuator/health/gpu");
		assertThat(response.statusCode()).isEqualTo(200);
		DocumentContext json = JsonPath.parse(response.body());
		assertThat(json.read("$.status", String.class)).isEqualTo("UP");
		assertThat(json.read("$.details.backend", String.class)).isEqualTo("CPU");
		assertThat(json.read("$.details.device", String.class)).isEqualTo(this.context.device().name());
		assertThat(json.read("$.details.poolMax", Integer.class)).isEqualTo(4);
		assertThat(json.read("$.details.memoryFreeBytes", Long.class)).isPositive();
		assertThat(json.read("$.details.poolSaturation", Double.class)).isBetween(0.0, 1.0);
	}

	@Test
	void infoShowsTheDevice() throws Exception {
		DocumentContext json = getJson("/actuator/info");
		assertThat(json.read("$.gpu.backend", String.class)).isEqualTo("CPU");
		assertThat(json.read("$.gpu.uuid", String.class)).isEqualTo(this.context.device().uuid());
		assertThat(json.read("$.gpu.driverVersion", String.class)).isEqualTo(this.context.device().driverVersion());
		assertThat(json.read("$.gpu.computeCapability", String.class)).isEmpty();
	}

	@Test
	void infoShowsTheRuntimeVersionFromTheRuntimeJarsManifest() throws Exception {
		// The reactor build (mvn verify) puts the packaged runtime jar on this class path; an IDE puts its classes.
		String runtime = GpuContext.class.getProtectionDomain().getCodeSource().getLocation().getPath();
		Assumptions.assumeTrue(runtime.endsWith(".jar"), () -> "the runtime comes from " + runtime + ", not its jar");
		DocumentContext json = getJson("/actuator/info");
		assertThat(json.read("$.gpu.runtimeVersion", String.class)).isNotBlank()
			.isEqualTo(System.getProperty("gpu-compute.version"));
	}

	private DocumentContext getJson(String path) throws IOException, InterruptedException {
		HttpResponse<String> response = get(path);
		assertThat(response.statusCode()).as(path).isEqualTo(200);
		return JsonPath.parse(response.body());
	}

	private HttpResponse<String> get(String path) throws IOException, InterruptedException {
		return http.send(HttpRequest.newBuilder(uri(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
	}

	private URI uri(String path) {
		return URI.create("http://localhost:" + this.port + path);
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
		Echo echo(GpuBatchers batchers) {
			return new Echo(batchers.create("echo", (batch) -> new java.util.ArrayList<>(batch.items())));
		}

	}

	/** The application's batcher, created as an application would: through {@link GpuBatchers}. */
	record Echo(GpuBatcher<Integer, Integer> batcher) {
	}

}
