package dev.gpucompute.cuda;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;
import static dev.gpucompute.ParamType.LONG;
import static dev.gpucompute.cuda.CudaTestSupport.TEST_KERNELS_PTX;
import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

import dev.gpucompute.Dim3;
import dev.gpucompute.GpuContext.MemoryInfo;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.NativeStream;

/**
 * What the tests of the CUDA backend against a real device, directly through the SPI, share: one
 * backend per test class (opened before its first test when CUDA is available, closed after its
 * last), a fresh stream per test, and after each test the check that the test left no buffer, no
 * used bytes and no health problem behind; and the kernels and launch shape several of them use.
 * Each subclass carries {@code @Tag("gpu")} and {@link CudaTestSupport.RequiresCuda} itself. The
 * sticky-error test lives in {@link CudaStickyErrorGpuTests}, in its own process, because an illegal
 * address poisons the primary context for the rest of the JVM.
 */
abstract class CudaBackendGpuFixture {

	static final KernelSource SAXPY_PTX = KernelSource.named("saxpy")
		.params(INT, FLOAT, BUFFER, BUFFER)
		.cudaResource(TEST_KERNELS_PTX);

	static final KernelSource SLEEP_THEN_WRITE = KernelSource.named("sleep_then_write")
		.params(LONG, BUFFER, INT)
		.cudaResource(TEST_KERNELS_PTX);

	static final LaunchConfig ONE_THREAD = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	static CudaDeviceBackend backend;

	NativeStream stream;

	private MemoryInfo memoryAtStart;

	@BeforeAll
	static void openBackend() {
		if (CudaTestSupport.availability().available()) {
			backend = CudaTestSupport.open(null);
		}
	}

	@AfterAll
	static void closeBackend() {
		if (backend != null) {
			backend.close();
		}
	}

	@BeforeEach
	void createStream() {
		this.memoryAtStart = backend.memoryInfo();
		this.stream = backend.createStream(StreamPriority.NORMAL, "test");
	}

	@AfterEach
	void destroyStream() {
		this.stream.synchronize();
		this.stream.destroy();
		MemoryInfo now = backend.memoryInfo();
		assertThat(now.liveBuffers()).as("buffers leaked by the test").isEqualTo(this.memoryAtStart.liveBuffers());
		assertThat(now.usedBytes()).isEqualTo(this.memoryAtStart.usedBytes());
		assertThat(backend.healthProblem()).isNull();
	}

}
