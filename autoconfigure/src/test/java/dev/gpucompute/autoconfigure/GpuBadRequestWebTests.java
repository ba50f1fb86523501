package dev.gpucompute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamScope;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * One bad request (its y shorter than its x, so the kernel fails) answers 500 and harms nothing
 * else: every later request, on whichever pooled stream it gets, answers 200 with the right sum; the
 * failure is counted once and health stays UP.
 */
@SpringBootTest(classes = GpuBadRequestWebTests.WebApplication.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.streams.pool-size=2", "gpu.streams.max-size=2",
				"management.endpoints.web.exposure.include=health", "management.endpoint.health.show-details=always" })
@ExtendWith(QuietOutputExtension.class)
class GpuBadRequestWebTests {

	@LocalServerPort
	private int port;

	@Autowired
	private GpuContext gpu;

	@Autowired
	private MeterRegistry registry;

	private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

	@Test
	void aFailingRequestAnswers500AndEveryLaterRequestSucceeds() throws Exception {
		assertThat(get("/saxpy?n=100&yLength=10&a=1").statusCode()).isEqualTo(500);
		List<CompletableFuture<HttpResponse<String>>> later = new ArrayList<>();
		for (int i = 0; i < 200; i++) {
			later.add(this.client.sendAsync(request("/saxpy?n=100&yLength=100&a=" + (i % 5)),
					HttpResponse.BodyHandlers.ofString()));
		}
		for (int i = 0; i < later.size(); i++) {
			HttpResponse<String> response = later.get(i).get();
			assertThat(response.statusCode()).as("request %d: %s", i, response.body()).isEqualTo(200);
			assertThat(Double.parseDouble(response.body())).isEqualTo((i % 5) * (100 * 99 / 2.0) + 100);
		}
		assertThat(this.gpu.launcher().kernel("saxpy").stats().errors()).isEqualTo(1);
		assertThat(this.registry.get("gpu.kernel.launches").tag("kernel", "saxpy").tag("outcome", "error")
			.functionCounter()
			.count()).isEqualTo(1);
		HttpResponse<String> health = get("/actuator/health");
		assertThat(health.statusCode()).isEqualTo(200);
		assertThat(health.body()).contains("\"status\":\"UP\"");
	}

	private HttpResponse<String> get(String path) throws Exception {
		return this.client.send(request(path), HttpResponse.BodyHandlers.ofString());
	}

	private HttpRequest request(String path) {
		return HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
			.timeout(Duration.ofSeconds(60))
			.build();
	}

	@RestController
	static class SaxpyController {

		private final GpuLauncher launcher;

		private final StreamPool pool;

		private final KernelSource saxpy;

		SaxpyController(GpuLauncher launcher, StreamPool pool, KernelSource saxpy) {
			this.launcher = launcher;
			this.pool = pool;
			this.saxpy = saxpy;
		}

		/** The README's round trip; a y shorter than n makes the kernel read past its end. */
		@GetMapping("/saxpy")
		String saxpy(@RequestParam int n, @RequestParam int yLength, @RequestParam float a) {
			float[] x = new float[n];
			float[] y = new float[yLength];
			for (int i = 0; i < n; i++) {
				x[i] = i;
			}
			java.util.Arrays.fill(y, 1);
			try (StreamLease lease = this.pool.acquire();
					StreamScope scope = this.launcher.useStream(lease.stream());
					DeviceBuffer xs = this.launcher.upload(HostArray.of(x));
					DeviceBuffer ys = this.launcher.upload(HostArray.of(y))) {
				this.launcher.launch(this.saxpy, LaunchConfig.linear(n, 32), n, a, xs, ys);
				ys.download(HostArray.of(y), lease.stream()).join();
			}
			double sum = 0;
			for (float value : y) {
				sum += value;
			}
			return Double.toString(sum);
		}

	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import(SaxpyController.class)
	static class WebApplication {

		@Bean
		KernelSource saxpy() {
			return TestKernels.saxpyCpu();
		}

	}

}
