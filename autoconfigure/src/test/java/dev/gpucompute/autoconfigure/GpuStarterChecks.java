package dev.gpucompute.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.IntBuffer;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.autoconfigure.actuate.GpuHealthContributorAutoConfiguration;
import dev.gpucompute.autoconfigure.actuate.GpuHealthIndicator;
import dev.gpucompute.autoconfigure.metrics.GpuMeterNames;
import dev.gpucompute.autoconfigure.metrics.GpuMetrics;
import dev.gpucompute.autoconfigure.metrics.GpuMetricsAutoConfiguration;

/**
 * The starter's checks that hold on every backend, shared by the CUDA test
 * ({@code GpuStarterCudaGpuTests}, run only on a GPU machine) and the CPU one ({@link GpuStarterTests},
 * run in CI): meter types, names and tags, health details and memory figures are written once, so
 * that a change of the main code which breaks the GPU test breaks CI first.
 */
public final class GpuStarterChecks {

	/** Adds one to every element: CUDA and CPU bodies. */
	public static final KernelSource ADD_ONE = KernelSource.named("add_one")
		.params(ParamType.INT, ParamType.BUFFER)
		.cuda("""
				extern "C" __global__ void add_one(int n, int* x) {
				  int i = blockIdx.x * blockDim.x + threadIdx.x;
				  if (i < n) x[i] += 1;
				}""")
		.cpu((block, args) -> {
			IntBuffer x = args.ints(1);
			for (int i = (int) block.firstIndex(); i < block.endIndex(args.i32(0)); i++) {
				x.put(i, x.get(i) + 1);
			}
		});

	private GpuStarterChecks() {
	}

	/** The starter with metrics (a simple registry) and health, on {@code gpu.backend=backend}. */
	public static ApplicationContextRunner runner(String backend) {
		return new ApplicationContextRunner()
			.withPropertyValues("gpu.backend=" + backend, "gpu.streams.pool-size=2", "gpu.kernels.locations=")
			.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, GpuMetricsAutoConfiguration.class,
					GpuHealthContributorAutoConfiguration.class));
	}

	/**
	 * The context runs on {@code backend}, health is UP with its figures, and the meters carry the
	 * device's UUID and move with a 4 MiB buffer and a launch of {@link #ADD_ONE} (counted by the
	 * {@code gpu.kernel.launches} function counter). The buffer is freed and the launcher synchronized
	 * when it returns.
	 */
	public static void healthIsUpAndTheMetersFollowTheDevice(AssertableApplicationContext context, Backend backend) {
		assertThat(context).hasNotFailed();
		GpuContext gpu = context.getBean(GpuContext.class);
		assertThat(gpu.backend()).isEqualTo(backend);
		Health health = context.getBean(GpuHealthIndicator.class).health();
		assertThat(health.getStatus()).isEqualTo(Status.UP);
		assertThat(health.getDetails()).containsEntry("backend", backend.name())
			.containsEntry("memoryTotalBytes", gpu.device().totalMemoryBytes())
			.containsKey("memoryFreeBytes");

		MeterRegistry registry = context.getBean(MeterRegistry.class);
		context.getBean(GpuMetrics.class).bindTo(registry);
		String uuid = gpu.device().uuid();
		assertThat(registry.get(GpuMeterNames.MEMORY_TOTAL).tag(GpuMeterNames.TAG_UUID, uuid).gauge().value())
			.isEqualTo(gpu.device().totalMemoryBytes());
		GpuLauncher launcher = context.getBean(GpuLauncher.class);
		double usedBefore = registry.get(GpuMeterNames.MEMORY_USED).gauge().value();
		int n = 1 << 20;
		try (DeviceBuffer buffer = launcher.upload(HostArray.of(new int[n]))) {
			assertThat(registry.get(GpuMeterNames.MEMORY_USED).gauge().value()).isEqualTo(usedBefore + 4.0 * n);
			launcher.launch(ADD_ONE, LaunchConfig.linear(n, 256), n, buffer);
			int[] back = new int[n];
			buffer.download(HostArray.of(back), launcher.currentStream()).join();
			assertThat(back[0]).isEqualTo(1);
			assertThat(back[n - 1]).isEqualTo(1);
		}
		launcher.currentStream().synchronize();
		assertThat(registry.get(GpuMeterNames.KERNEL_LAUNCHES)
			.tag(GpuMeterNames.TAG_UUID, uuid)
			.tag(GpuMeterNames.TAG_KERNEL, ADD_ONE.name())
			.tag(GpuMeterNames.TAG_OUTCOME, GpuMeterNames.OUTCOME_SUCCESS)
			.functionCounter()
			.count()).isEqualTo(1);
		assertThat(registry.get(GpuMeterNames.KERNEL_LAUNCHES)
			.tag(GpuMeterNames.TAG_KERNEL, ADD_ONE.name())
			.tag(GpuMeterNames.TAG_OUTCOME, GpuMeterNames.OUTCOME_ERROR)
			.functionCounter()
			.count()).isZero();
	}

}
