package dev.gpucompute.sample;

import java.nio.file.Path;
import java.time.Duration;

import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

import dev.gpucompute.GpuContext;
import dev.gpucompute.Kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The 'demo' profile creates and fills the demo collection and keeps searching it, so the GPU
 * meters move; closing the application stops it cleanly, with no search failing on the way.
 */
class DemoLoadTests {

	@TempDir
	Path data;

	@Test
	void theDemoProfileProducesSteadySearches() {
		GpuContext gpu;
		try (ConfigurableApplicationContext app = SpringApplication.run(SampleApplication.class, "--server.port=0",
				"--spring.profiles.active=demo", "--gpu.backend=cpu", "--gpu.cpu.threads=2", "--gpu.streams.pool-size=2",
				"--sample.data-dir=" + this.data, "--sample.demo-load.size=3000", "--sample.demo-load.dimension=32",
				"--sample.demo-load.interval=5ms", "--spring.main.banner-mode=off")) {
			MeterRegistry meters = app.getBean(MeterRegistry.class);
			gpu = app.getBean(GpuContext.class);
			await().atMost(Duration.ofSeconds(30))
				.until(() -> meters.counter("sample.demo.searches", "outcome", "success").count() >= 20);
			// The demo's k (1 to 20) takes the fused path.
			Kernel fused = gpu.launcher().kernel("knn_fused");
			assertThat(fused.stats().launches()).isGreaterThanOrEqualTo(20);
			Http http = new Http("http://localhost:" + app.getEnvironment().getProperty("local.server.port"));
			assertThat(http.get("/collections/demo").body()).contains("\"size\":3000");
			assertThat(meters.counter("sample.demo.searches", "outcome", "error").count()).isZero();
		}
		assertThat(gpu.isClosed()).isTrue();
	}

}
