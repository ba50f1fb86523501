package dev.gpucompute.sample;

import java.nio.file.Path;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@link SearchesOverHttpSuite} on a CUDA device ({@code gpu.backend=cuda}). Skipped without a device;
 * failed when {@code GPU_REQUIRED=1}. {@link SampleAppCpuSearchTests} runs the same checks in CI.
 */
@Tag("gpu")
@ExtendWith(RequiresCuda.class)
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.backend=cuda", "gpu.streams.pool-size=4", "sample.limits.max-body-size=16MB" })
class SampleAppCudaGpuTests extends SearchesOverHttpSuite {

	private static final Path DATA = dataDirectory("sample-app-cuda-");

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", DATA::toString);
	}

	@Override
	String backend() {
		return "CUDA";
	}

}
