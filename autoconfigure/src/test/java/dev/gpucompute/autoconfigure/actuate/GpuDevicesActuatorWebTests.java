package dev.gpucompute.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;

import com.jayway.jsonpath.DocumentContext;
import com.jayway.jsonpath.JsonPath;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;

/**
 * The {@code gpu} endpoint, health and info over HTTP with three devices ({@code gpu.devices=all} on
 * three CPU devices): a report per device, selectors for one device, a health component per device.
 */
@SpringBootTest(classes = GpuDevicesActuatorWebTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.cpu.devices=3", "gpu.devices=all", "gpu.streams.pool-size=2",
				"gpu.streams.max-size=4", "gpu.cpu.threads=1", "management.endpoints.web.exposure.include=gpu,health,info",
				"management.endpoint.health.show-details=always" })
class GpuDevicesActuatorWebTests {

	private static final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private GpuDevices devices;

	@Test
	void wholeReportHasEveryDeviceByOrdinal() throws Exception {
		GpuLauncher launcher = this.devices.get(2).launcher();
		Kernel noop = launcher.kernel("noop");
		long before = noop.stats().launches();
		launcher.launch(noop, LaunchConfig.linear(1, 1), 1);
		launcher.currentStream().synchronize();
		DocumentContext json = getJson("/actuator/gpu");
		assertThat(json.read("$.primary", Integer.class)).isZero();
		Map<String, Object> reports = json.read("$.devices");
		assertThat(reports).containsOnlyKeys("0", "1", "2");
		for (GpuContext gpu : this.devices.contexts()) {
			String device = "$.devices['" + gpu.device().ordinal() + "']";
			assertThat(json.read(device + ".backend.backend", String.class)).isEqualTo("CPU");
			assertThat(json.read(device + ".backend.healthy", Boolean.class)).isTrue();
			assertThat(json.read(device + ".device.ordinal", Integer.class)).isEqualTo(gpu.device().ordinal());
			assertThat(json.read(device + ".device.uuid", String.class)).isEqualTo(gpu.device().uuid());
			assertThat(json.read(device + ".streams.maxSize", Integer.class)).isEqualTo(4);
			assertThat(json.read(device + ".memory.totalBytes", Long.class)).isEqualTo(gpu.device().totalMemoryBytes());
		}
		assertThat(json.read("$.devices['2'].kernels.noop.launches", Long.class)).isEqualTo(before + 1);
		assertThat(json.read("$.devices['1'].kernels.noop.launches", Long.class))
			.isEqualTo(this.devices.get(1).launcher().kernel("noop").stats().launches());
	}

	@Test
	void oneDevicesReportAndOnePartOfIt() throws Exception {
		try (StreamLease lease = this.devices.get(1).streams().acquire()) {
			DocumentContext device = getJson("/actuator/gpu/devices/1");
			assertThat(device.read("$.device.ordinal", Integer.class)).isEqualTo(1);
			assertThat(device.read("$.device.uuid", String.class)).isEqualTo("CPU-1");
			assertThat(device.read("$.streams.active", Integer.class)).isEqualTo(1);
			DocumentContext streams = getJson("/actuator/gpu/devices/1/streams");
			assertThat(streams.read("$.active", Integer.class)).isEqualTo(1);
			assertThat(getJson("/actuator/gpu/devices/2/streams").read("$.active", Integer.class)).isZero();
			assertThat(getJson("/actuator/gpu/devices/1/backend").read("$.healthy", Boolean.class)).isTrue();
			assertThat(getJson("/actuator/gpu/devices/0/device").read("$.uuid", String.class)).isEqualTo("CPU-0");
		}
	}

	@Test
	void aPartSelectorGivesThatPartOfEveryDevice() throws Exception {
		DocumentContext json = getJson("/actuator/gpu/device");
		Map<String, Object> devices = json.read("$");
		assertThat(devices).containsOnlyKeys("0", "1", "2");
		assertThat(json.read("$['1'].uuid", String.class)).isEqualTo("CPU-1");
		assertThat(getJson("/actuator/gpu/memory").read("$['2'].totalBytes", Long.class))
			.isEqualTo(this.devices.get(2).device().totalMemoryBytes());
		Map<String, Object> all = getJson("/actuator/gpu/devices").read("$");
		assertThat(all).containsOnlyKeys("0", "1", "2");
	}

	@Test
	void unknownDeviceOrPartIsNotFound() throws Exception {
		assertThat(get("/actuator/gpu/devices/3").statusCode()).isEqualTo(404);
		assertThat(get("/actuator/gpu/devices/one").statusCode()).isEqualTo(404);
		assertThat(get("/actuator/gpu/devices/1/nonsense").statusCode()).isEqualTo(404);
		assertThat(get("/actuator/gpu/nonsense").statusCode()).isEqualTo(404);
		assertThat(get("/actuator/gpu/gadgets/1").statusCode()).isEqualTo(404);
	}

	@Test
	void healthHasAComponentPerDevice() throws Exception {
		HttpResponse<String> response = get("/actuator/health/gpu");
		assertThat(response.statusCode()).isEqualTo(200);
		DocumentContext json = JsonPath.parse(response.body());
		assertThat(json.read("$.status", String.class)).isEqualTo("UP");
		Map<String, Object> components = json.read("$.components");
		assertThat(components).containsOnlyKeys("0", "1", "2");
		DocumentContext one = getJson("/actuator/health/gpu/1");
		assertThat(one.read("$.status", String.class)).isEqualTo("UP");
		assertThat(one.read("$.details.ordinal", Integer.class)).isEqualTo(1);
		assertThat(one.read("$.details.poolMax", Integer.class)).isEqualTo(4);
	}

	@Test
	void infoListsEveryDevice() throws Exception {
		DocumentContext json = getJson("/actuator/info");
		assertThat(json.read("$.gpu.primary", Integer.class)).isZero();
		Map<String, Object> devices = json.read("$.gpu.devices");
		assertThat(devices).containsOnlyKeys("0", "1", "2");
		for (GpuContext gpu : this.devices.contexts()) {
			String device = "$.gpu.devices['" + gpu.device().ordinal() + "']";
			assertThat(json.read(device + ".uuid", String.class)).isEqualTo(gpu.device().uuid());
			assertThat(json.read(device + ".backend", String.class)).isEqualTo("CPU");
			assertThat(json.read(device + ".ordinal", Integer.class)).isEqualTo(gpu.device().ordinal());
		}
	}

	private DocumentContext getJson(String path) throws IOException, InterruptedException {
		HttpResponse<String> response = get(path);
		assertThat(response.statusCode()).as(path).isEqualTo(200);
		return JsonPath.parse(response.body());
	}

	private HttpResponse<String> get(String path) throws IOException, InterruptedException {
		return http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path)).GET().build(),
				HttpResponse.BodyHandlers.ofString());
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
