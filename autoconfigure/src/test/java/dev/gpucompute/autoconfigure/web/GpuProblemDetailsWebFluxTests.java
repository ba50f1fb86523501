package dev.gpucompute.autoconfigure.web;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

import com.jayway.jsonpath.DocumentContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.web.reactive.DispatcherHandler;

import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.autoconfigure.QuietOutputExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The same problem details from a real WebFlux server.
 */
@SpringBootTest(classes = GpuProblemDetailsWebFluxTests.App.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "spring.main.web-application-type=reactive", "gpu.backend=cpu", "gpu.cpu.threads=1",
				"gpu.streams.pool-size=1", "gpu.streams.max-size=1" })
@ExtendWith(QuietOutputExtension.class)
class GpuProblemDetailsWebFluxTests {

	private final HttpClient http = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private StreamPool pool;

	@Autowired
	private ApplicationContext context;

	@Test
	void gpuFailuresAreProblemDetailsInWebFlux() throws Exception {
		assertThat(this.context.getBeansOfType(DispatcherHandler.class)).as("a reactive application").isNotEmpty();
		HttpResponse<String> busy;
		try (StreamLease held = this.pool.acquire()) {
			busy = get("/lease");
		}
		DocumentContext body = GpuProblemDetailsWebTests.problem(busy, 503);
		assertThat(busy.headers().firstValue("Retry-After")).hasValue("1");
		assertThat(body.read("$.type", String.class)).isEqualTo("urn:gpu-compute:problem:pool-exhausted");
		assertThat(body.read("$.instance", String.class)).isEqualTo("/lease");
		GpuProblemDetailsWebTests.problem(get("/allocate"), 503);
		DocumentContext kernel = GpuProblemDetailsWebTests.problem(get("/kernel"), 500);
		assertThat(kernel.read("$.kernel", String.class)).isEqualTo("out_of_bounds");
		GpuProblemDetailsWebTests.problem(get("/future-get"), 503);
		DocumentContext tooSmall = GpuProblemDetailsWebTests.problem(get("/group"), 500);
		assertThat(tooSmall.read("$.type", String.class)).isEqualTo("urn:gpu-compute:problem:pool-too-small");
		assertThat(tooSmall.read("$.detail", String.class)).contains("gpu.streams.max-size");
		HttpResponse<String> other = get("/not-gpu");
		assertThat(other.statusCode()).isEqualTo(500);
		assertThat(other.body()).doesNotContain("urn:gpu-compute");
	}

	private HttpResponse<String> get(String path) throws Exception {
		return this.http.send(HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path)).build(),
				HttpResponse.BodyHandlers.ofString());
	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import(FailingController.class)
	static class App {

	}

}
