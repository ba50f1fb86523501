package dev.gpucompute.sample;

import java.nio.file.Path;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@link SampleAppCudaGpuTests}'s checks ({@link SearchesOverHttpSuite}) on the CPU backend, with the
 * same properties but the backend, in CI.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cpu", "gpu.streams.pool-size=4", "sample.limits.max-body-size=16MB" })
class SampleAppCpuSearchTests extends SearchesOverHttpSuite {

	private static final Path DATA = dataDirectory("sample-app-cpu-");

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", DATA::toString);
	}

	@Override
	String backend() {
		return "CPU";
	}

}
