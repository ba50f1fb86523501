package dev.gpucompute.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.StreamLease;

/**
 * One of three devices goes down (its context is closed under the running application): its health
 * component is {@code DOWN} with the reason, the other devices stay {@code UP} and keep serving
 * (placement moves to them, their reports answer), and the {@code gpu} status is {@code DOWN} by
 * Spring Boot's status aggregation.
 */
@SpringBootTest(classes = GpuDevicesHealthDownWebTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.cpu.devices=3", "gpu.devices=all", "gpu.streams.pool-size=1",
				"gpu.cpu.threads=1", "management.endpoints.web.exposure.include=gpu,health",
				"management.endpoint.health.show-details=always" })
@DirtiesContext
class GpuDevicesHealthDownWebTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private GpuDevices devices;

	@Test
	void oneDeviceDownShowsForThatDeviceWhileTheOthersKeepServing() throws Exception {
		assertThat(get("/actuator/health/gpu").statusCode()).isEqualTo(200);
		GpuContext down = this.devices.get(1);
		down.close();

		HttpResponse<String> one = get("/actuator/health/gpu/1");
		assertThat(one.statusCode()).isEqualTo(503);
		DocumentContext json = JsonPath.parse(one.body());
		assertThat(json.read("$.status", String.class)).isEqualTo("DOWN");
		assertThat(json.read("$.details.reason", String.class)).isEqualTo(down.healthProblem()).contains("closed");
		for (String ordinal : new String[] { "0", "2" }) {
			HttpResponse<String> other = get("/actuator/health/gpu/" + ordinal);
			assertThat(other.statusCode()).as("device %s", ordinal).isEqualTo(200);
			assertThat(JsonPath.parse(other.body()).read("$.status", String.class)).isEqualTo("UP");
		}
		// Boot's status aggregator: one component DOWN makes the group DOWN.
		HttpResponse<String> gpu = get("/actuator/health/gpu");
		assertThat(gpu.statusCode()).isEqualTo(503);
		DocumentContext components = JsonPath.parse(gpu.body());
		assertThat(components.read("$.status", String.class)).isEqualTo("DOWN");
		assertThat(components.read("$.components['0'].status", String.class)).isEqualTo("UP");
		assertThat(components.read("$.components['1'].status", String.class)).isEqualTo("DOWN");
		assertThat(components.read("$.components['2'].status", String.class)).isEqualTo("UP");

		// The other devices keep serving: placement avoids the device that is down, and they still work.
		for (int i = 0; i < 6; i++) {
			GpuContext chosen = this.devices.leastLoaded();
			assertThat(chosen).isNotSameAs(down);
			try (StreamLease lease = chosen.streams().acquire()) {
				lease.stream().synchronize();
			}
		}
		assertThat(this.devices.forKey("tenant-" + 7)).isNotSameAs(down);
		DocumentContext report = JsonPath.parse(get("/actuator/gpu").body());
		assertThat(report.read("$.devices['1'].backend.healthy", Boolean.class)).isFalse();
		assertThat(report.read("$.devices['1'].backend.problem", String.class)).contains("closed");
		assertThat(report.read("$.devices['0'].backend.healthy", Boolean.class)).isTrue();
		assertThat(report.read("$.devices['2'].backend.healthy", Boolean.class)).isTrue();
		assertThat(get("/actuator/gpu/devices/1/memory").statusCode()).isEqualTo(404);
		assertThat(get("/actuator/gpu/devices/2/memory").statusCode()).isEqualTo(200);
		HttpResponse<String> memory = get("/actuator/gpu/memory");
		assertThat(memory.statusCode()).isEqualTo(200);
		DocumentContext memories = JsonPath.parse(memory.body());
		assertThat(memories.read("$['1']", Object.class)).isNull();
		assertThat(memories.read("$['2'].totalBytes", Long.class)).isEqualTo(this.devices.get(2).device().totalMemoryBytes());
	}

	private HttpResponse<String> get(String path) throws Exception {
		return this.http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path)).GET().build(),
				HttpResponse.BodyHandlers.ofString());
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class App {

	}

}
