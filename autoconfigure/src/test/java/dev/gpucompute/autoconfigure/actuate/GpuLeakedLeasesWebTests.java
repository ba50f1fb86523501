package dev.gpucompute.autoconfigure.actuate;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import dev.gpucompute.GpuContext;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The leaked leases, end to end: a controller that never closes its lease drains the pool;
 * requests then get 503 problem details, and once every stream has been held past the leak-detection
 * threshold while callers time out, {@code gpuStreams} and the readiness probe are DOWN while the
 * liveness probe stays UP; the endpoint lists the leases with the controller method that acquired
 * them. Returning the leases makes the service ready again; losing the GPU context fails liveness.
 */
@SpringBootTest(classes = GpuLeakedLeasesWebTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.max-size=2",
				"gpu.streams.acquire-timeout=50ms", "gpu.streams.leak-detection-threshold=1s",
				"management.endpoint.health.probes.enabled=true", "management.endpoint.health.show-details=always",
				"management.endpoints.web.exposure.include=health,gpu" })
@DirtiesContext
class GpuLeakedLeasesWebTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private LeakingController leaking;

	@Autowired
	private GpuContext context;

	@Test
	void leakedLeasesMakeTheServiceUnreadyButAliveAndTheEndpointShowsWhereTheyWereTaken() throws Exception {
		assertThat(get("/leak").statusCode()).isEqualTo(200);
		assertThat(get("/leak").statusCode()).isEqualTo(200);
		assertThat(get("/work").statusCode()).as("pool drained").isEqualTo(503);
		assertThat(status("/actuator/health/gpuStreams")).as("leases still young").isEqualTo("UP");
		Thread.sleep(1200);
		assertThat(get("/work").statusCode()).isEqualTo(503);

		HttpResponse<String> streams = get("/actuator/health/gpuStreams");
		assertThat(streams.statusCode()).as(streams.body()).isEqualTo(503);
		DocumentContext health = JsonPath.parse(streams.body());
		assertThat(health.read("$.status", String.class)).isEqualTo("DOWN");
		assertThat(health.read("$.details.reason", String.class))
			.startsWith("All 2 pooled streams have been leased for more than 1000 ms")
			.contains("the last acquisition timed out");
		assertThat(health.read("$.details.active", Integer.class)).isEqualTo(2);
		assertThat(health.read("$.details.oldestLeaseMillis", Long.class)).isGreaterThanOrEqualTo(1000);
		assertThat(get("/actuator/health").statusCode()).isEqualTo(503);
		assertThat(get("/actuator/health/readiness").statusCode()).isEqualTo(503);
		// Probe groups show no components; which contributors they hold is checked below.
		assertThat(get("/actuator/health/liveness").statusCode()).as("a drained pool is no reason to restart")
			.isEqualTo(200);

		DocumentContext leases = JsonPath.parse(get("/actuator/gpu/leases").body());
		List<String> firstSite = leases.read("$[0].site");
		assertThat(firstSite.get(0)).contains(LeakingController.class.getName() + ".leak(");
		assertThat(leases.read("$[0].heldMillis", Long.class)).isGreaterThanOrEqualTo(1000);
		assertThat(leases.read("$.length()", Integer.class)).isEqualTo(2);
		assertThat(JsonPath.parse(get("/actuator/gpu/streams").body()).read("$.leaksDetected", Integer.class))
			.as("each lease was reported once it passed the threshold")
			.isEqualTo(2);

		this.leaking.returnLeases();
		assertThat(get("/work").statusCode()).isEqualTo(200);
		assertThat(get("/actuator/health/readiness").statusCode()).isEqualTo(200);
		assertThat(status("/actuator/health/gpuStreams")).isEqualTo("UP");

		// A lost context (here closed; on CUDA a sticky error reports the same way) fails liveness.
		this.context.close();
		assertThat(get("/actuator/health/liveness").statusCode()).isEqualTo(503);
		assertThat(status("/actuator/health/gpu")).isEqualTo("DOWN");
	}

	@Test
	void theApplicationsOwnProbeGroupsAreLeftAsConfigured() {
		try (ConfigurableApplicationContext configured = start("--management.endpoint.health.group.liveness.include=livenessState",
				"--management.endpoint.health.group.readiness.include=readinessState,gpu")) {
			HealthEndpointGroups groups = configured.getBean(HealthEndpointGroups.class);
			assertThat(groups.get("liveness").isMember("gpu")).isFalse();
			assertThat(groups.get("readiness").isMember("gpu")).isTrue();
			assertThat(groups.get("readiness").isMember("gpuStreams")).isFalse();
		}
		try (ConfigurableApplicationContext defaults = start()) {
			HealthEndpointGroups groups = defaults.getBean(HealthEndpointGroups.class);
			assertThat(groups.get("liveness").isMember("livenessState")).isTrue();
			assertThat(groups.get("liveness").isMember("gpu")).isTrue();
			assertThat(groups.get("liveness").isMember("gpu/1")).as("a device of several").isTrue();
			assertThat(groups.get("liveness").isMember("gpuStreams")).isFalse();
			assertThat(groups.get("readiness").isMember("gpuStreams/0")).isTrue();
		}
		try (ConfigurableApplicationContext noProbes = start("--management.endpoint.health.probes.enabled=false")) {
			assertThat(noProbes.getBean(HealthEndpointGroups.class).get("liveness")).isNull();
		}
	}

	private static ConfigurableApplicationContext start(String... args) {
		SpringApplication application = new SpringApplication(App.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		List<String> all = new java.util.ArrayList<>(List.of("--gpu.backend=cpu", "--gpu.cpu.threads=1",
				"--gpu.streams.pool-size=0", "--management.endpoint.health.probes.enabled=true"));
		all.addAll(List.of(args));
		return application.run(all.toArray(String[]::new));
	}

	private String status(String path) throws Exception {
		return JsonPath.parse(get(path).body()).read("$.status", String.class);
	}

	private HttpResponse<String> get(String path) throws Exception {
		return this.http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path)).build(),
				HttpResponse.BodyHandlers.ofString());
	}

	/** Forgets to close its leases; keeps them reachable, as a stuck or careless holder would. */
	@RestController
	static class LeakingController {

		private final StreamPool pool;

		private final List<StreamLease> leaked = new CopyOnWriteArrayList<>();

		LeakingController(StreamPool pool) {
			this.pool = pool;
		}

		@GetMapping("/leak")
		String leak() {
			StreamLease lease = this.pool.acquire();
			this.leaked.add(lease);
			return lease.stream().name();
		}

		@GetMapping("/work")
		String work() {
			try (StreamLease lease = this.pool.acquire()) {
				return lease.stream().name();
			}
		}

		void returnLeases() {
			this.leaked.forEach(StreamLease::close);
			this.leaked.clear();
		}

	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import(LeakingController.class)
	static class App {

	}

}
