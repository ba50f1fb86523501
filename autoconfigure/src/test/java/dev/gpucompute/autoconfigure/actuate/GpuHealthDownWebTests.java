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

/**
 * Health goes {@code DOWN}, with the reason, when the GPU context is closed under a running
 * application; the endpoint keeps answering.
 */
@SpringBootTest(classes = GpuHealthDownWebTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.streams.pool-size=1", "gpu.cpu.threads=1",
				"management.endpoints.web.exposure.include=gpu,health",
				"management.endpoint.health.show-details=always" })
@DirtiesContext
class GpuHealthDownWebTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private GpuContext context;

	@Test
	void healthIsDownOnceTheContextIsClosed() throws Exception {
		assertThat(get("/actuator/health/gpu").statusCode()).isEqualTo(200);
		this.context.close();
		HttpResponse<String> response = get("/actuator/health/gpu");
		assertThat(response.statusCode()).isEqualTo(503);
		DocumentContext json = JsonPath.parse(response.body());
		assertThat(json.read("$.status", String.class)).isEqualTo("DOWN");
		assertThat(json.read("$.details.reason", String.class)).isEqualTo(this.context.healthProblem())
			.contains("closed");
		assertThat(get("/actuator/health").statusCode()).isEqualTo(503);
		HttpResponse<String> gpu = get("/actuator/gpu");
		assertThat(gpu.statusCode()).isEqualTo(200);
		DocumentContext report = JsonPath.parse(gpu.body());
		assertThat(report.read("$.backend.healthy", Boolean.class)).isFalse();
		assertThat(report.read("$.backend.problem", String.class)).contains("closed");
		assertThat(get("/actuator/gpu/memory").statusCode()).isEqualTo(404);
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
