package dev.gpucompute.autoconfigure;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.TestExecutionListeners;
import org.springframework.test.context.TestExecutionListeners.MergeMode;
import org.springframework.test.context.support.DependencyInjectionTestExecutionListener;
import org.springframework.test.context.support.DirtiesContextTestExecutionListener;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamScope;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A web application that launches kernels from request threads on pooled streams, shut down
 * (as on SIGTERM) while requests are in flight: every accepted request completes with its result,
 * and afterwards no stream or event is left.
 *
 * <p>The requests are held at a gate until the server has begun its graceful shutdown, and only
 * then lease streams and launch. More requests than streams are in flight, so some wait for a
 * lease during the shutdown. Were the GPU drained before the server finished its requests, these
 * leases would be refused and the requests would fail.
 */
@SpringBootTest(classes = GpuWebApplicationTests.WebApplication.class, webEnvironment = WebEnvironment.RANDOM_PORT,
		properties = { "server.shutdown=graceful", "gpu.backend=cpu", "gpu.streams.pool-size=2",
				"gpu.streams.max-size=3", "gpu.kernels.locations=classpath:kernels/default-root/gpu/kernels/" })
@DirtiesContext
// The test closes the application itself; listeners that use the context after each test would fail.
@TestExecutionListeners(listeners = { DependencyInjectionTestExecutionListener.class,
		DirtiesContextTestExecutionListener.class }, mergeMode = MergeMode.REPLACE_DEFAULTS)
class GpuWebApplicationTests {

	private static final int REQUESTS = 8;

	private static final int N = 1000;

	@LocalServerPort
	private int port;

	@Autowired
	private ConfigurableApplicationContext context;

	@Autowired
	private GpuContext gpu;

	@Autowired
	private Gate gate;

	@Test
	void shutdownWhileRequestsAreInFlightCompletesEveryAcceptedRequest() throws Exception {
		HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
		List<CompletableFuture<HttpResponse<String>>> responses = new ArrayList<>();
		for (int i = 0; i < REQUESTS; i++) {
			HttpRequest request = HttpRequest
				.newBuilder(URI.create("http://localhost:" + this.port + "/saxpy?n=" + N + "&a=" + i))
				.timeout(Duration.ofSeconds(60))
				.build();
			responses.add(client.sendAsync(request, HttpResponse.BodyHandlers.ofString()));
		}
		assertThat(this.gate.entered.await(30, TimeUnit.SECONDS)).as("all requests reached the controller").isTrue();
		Kernel saxpy = this.gpu.launcher().kernel("saxpy");
		StreamPool pool = this.gpu.streams();
		WebServerGracefulShutdownLifecycle graceful = this.context.getBean(WebServerGracefulShutdownLifecycle.class);

		Thread closer = new Thread(this.context::close, "sigterm");
		closer.start();
		await().atMost(Duration.ofSeconds(30)).until(() -> !graceful.isRunning() && refusesConnections());
		assertThat(this.gpu.isClosed()).isFalse();
		this.gate.open.countDown();

		for (int i = 0; i < REQUESTS; i++) {
			HttpResponse<String> response = responses.get(i).get(60, TimeUnit.SECONDS);
			assertThat(response.statusCode()).as("status of request %d: %s", i, response.body()).isEqualTo(200);
			assertThat(Double.parseDouble(response.body())).as("result of request %d", i).isEqualTo(expectedSum(i));
		}
		closer.join(60_000);
		assertThat(closer.isAlive()).isFalse();
		assertThat(saxpy.stats().launches()).isEqualTo(REQUESTS);
		assertThat(pool.stats().acquisitions()).isEqualTo(REQUESTS);
		assertThat(pool.stats().highWaterMark()).isLessThanOrEqualTo(3);
		assertThat(this.gpu.isClosed()).isTrue();
		assertThat(pool.stats().size()).isZero();
		assertThat(pool.stats().active()).isZero();
		assertThat(this.gpu.events().live()).isZero();
	}

	/** The sum of {@code y = a * x + y} over {@code x[i] = i, y[i] = 1}. */
	private static double expectedSum(int a) {
		return a * (N * (N - 1) / 2.0) + N;
	}

	private boolean refusesConnections() {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("localhost", this.port), 1000);
			return false;
		}
		catch (IOException ex) {
			return true;
		}
	}

	/** Holds requests in the controller until the test opens it. */
	static class Gate {

		final CountDownLatch entered = new CountDownLatch(REQUESTS);

		final CountDownLatch open = new CountDownLatch(1);

	}

	@RestController
	static class SaxpyController {

		private final GpuLauncher launcher;

		private final StreamPool pool;

		private final Gate gate;

		SaxpyController(GpuLauncher launcher, StreamPool pool, Gate gate) {
			this.launcher = launcher;
			this.pool = pool;
			this.gate = gate;
		}

		@GetMapping("/saxpy")
		String saxpy(@RequestParam int n, @RequestParam float a) throws InterruptedException {
			this.gate.entered.countDown();
			if (!this.gate.open.await(60, TimeUnit.SECONDS)) {
				throw new IllegalStateException("The test never opened the gate");
			}
			float[] x = new float[n];
			float[] y = new float[n];
			for (int i = 0; i < n; i++) {
				x[i] = i;
				y[i] = 1;
			}
			try (StreamLease lease = this.pool.acquire();
					StreamScope scope = this.launcher.useStream(lease.stream());
					DeviceBuffer xs = this.launcher.upload(HostArray.of(x));
					DeviceBuffer ys = this.launcher.upload(HostArray.of(y))) {
				this.launcher.launch(this.launcher.kernel("saxpy"), LaunchConfig.linear(n, 128), n, a, xs, ys);
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
		Gate gate() {
			return new Gate();
		}

		/** Params and the CPU implementation of the kernel whose CUDA code is {@code saxpy.cu}. */
		@Bean
		KernelSource saxpy() {
			return TestKernels.saxpyCpu();
		}

	}

}
