package dev.gpucompute.sample;

import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.BeforeEach;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import dev.gpucompute.GpuContext;
import dev.gpucompute.test.GpuCpuBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The application on a random port, CPU backend, small limits so that the limits can be tested, and
 * a data directory of its own. Subclasses share one application context (Spring caches it), and
 * each test starts with no collections.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "sample.limits.max-body-size=1MB", "sample.memory-budget=512KB", "sample.limits.max-queries=50",
				"sample.limits.max-results=2000",
				"gpu.streams.pool-size=2", "gpu.streams.max-size=8", "gpu.cpu.threads=2" })
@GpuCpuBackend
abstract class RunningAppFixture {

	static final Path DATA = DataDirectories.create("sample-app-");

	static {
		// Shared by every subclass's (one, cached) application: deleted when the test JVM ends.
		Runtime.getRuntime().addShutdownHook(new Thread(() -> DataDirectories.delete(DATA)));
	}

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", DATA::toString);
	}

	@LocalServerPort
	int port;

	@Autowired
	GpuContext context;

	Http http;

	@BeforeEach
	void emptyService() {
		this.http = new Http("http://localhost:" + this.port);
		this.http.deleteAllCollections();
	}

	/** After successful work: sampled kernel timing returns its events once the work has completed. */
	void awaitIdle() {
		await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
			assertThat(this.context.streams().stats().active()).as("leased streams").isZero();
			assertThat(this.context.events().inUse()).as("events in use").isZero();
		});
	}

}
