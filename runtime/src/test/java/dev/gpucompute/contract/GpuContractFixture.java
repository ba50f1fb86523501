package dev.gpucompute.contract;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.settings.KernelTiming;

/**
 * The fixture of the core contract suites ({@link dev.gpucompute.contract.stream.StreamContractSuite},
 * {@link dev.gpucompute.contract.kernel.LaunchContractSuite},
 * {@link dev.gpucompute.contract.pool.PoolAndCloseContractSuite} and others; docs/runtime.md,
 * "Semantics"): a context per test with a pool of 2 to 8 streams, the helpers those suites share, and
 * the check that a test left nothing held. A subclass supplies the backend through {@link #builder()};
 * the tests use only the public API and kernels that exist for every backend. Concurrency is proven
 * by rendezvous, never by a stopwatch. Shared by the suites of several subpackages, so its helpers
 * are protected.
 */
public abstract class GpuContractFixture {

	/** Long enough that a missed rendezvous is not a scheduling accident; short enough for CI. */
	protected static final int RENDEZVOUS_TIMEOUT_MS = 10_000;

	protected static final LaunchConfig ONE = LaunchConfig.of(Dim3.of(1), Dim3.of(1));

	protected GpuContext context;

	protected GpuLauncher launcher;

	protected StreamPool pool;

	private long memoryAtStart;

	/** A builder for the backend under test; the suite adds its own pool sizes. */
	protected abstract GpuContextBuilder builder();

	@BeforeEach
	protected void open() {
		this.context = builder().poolSize(2).maxSize(8).acquireTimeout(Duration.ofSeconds(10))
			.kernelTiming(KernelTiming.OFF)
			.open();
		this.launcher = this.context.launcher();
		this.pool = this.context.streams();
		this.memoryAtStart = this.context.memory().usedBytes();
	}

	@AfterEach
	protected void close() {
		if (this.context != null) {
			this.context.close();
		}
	}

	// ---- helpers -----------------------------------------------------------------------------

	protected Kernel kernel(KernelSource source) {
		return this.launcher.load(source);
	}

	protected int[] read(DeviceBuffer buffer, int n, GpuStream stream) {
		int[] host = new int[n];
		buffer.download(HostArray.of(host), stream).join();
		return host;
	}

	protected DeviceBuffer zeros(int ints) {
		DeviceBuffer buffer = this.launcher.allocate(4L * ints, ElementType.BYTE);
		buffer.fill((byte) 0, buffer.stream());
		return buffer;
	}

	/** Nothing held: pool fully idle, no event in use, device memory back to where the test started. */
	protected void assertNothingLeaked() {
		this.context.synchronizeDevice();
		PoolStats stats = this.pool.stats();
		assertThat(stats.active()).as("leased streams").isZero();
		assertThat(stats.pending()).as("waiting threads").isZero();
		assertThat(stats.idle()).as("idle streams").isEqualTo(stats.size());
		assertThat(this.context.events().inUse()).as("events in use").isZero();
		assertThat(this.context.memory().usedBytes()).as("device memory in use").isEqualTo(this.memoryAtStart);
	}

}
