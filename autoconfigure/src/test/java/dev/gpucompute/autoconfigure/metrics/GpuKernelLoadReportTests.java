package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.GpuContextCustomizer;

/**
 * What the starter shows of kernel loads: start-up kernels load before any work, a
 * launch that loads a kernel is logged once with how to load it up front, and a load that began while
 * work was in flight is logged at WARN and timed in {@value GpuMeterNames#KERNEL_LOAD_WAIT}. On the CPU
 * backend, with a zero threshold so that a load with work in flight counts as waited (on CUDA the
 * driver's module load really waits; see the runtime's kernel-load contract suite).
 */
@ExtendWith(OutputCaptureExtension.class)
class GpuKernelLoadReportTests {

	static final LaunchConfig ONE = LaunchConfig.linear(1, 1);

	static final KernelSource AT_START = KernelSource.named("at_start").params(ParamType.INT).cpu((block, args) -> {
	});

	static final KernelSource LATE = KernelSource.named("late").params(ParamType.INT).cpu((block, args) -> {
	});

	static final KernelSource STALLED = KernelSource.named("stalled").params(ParamType.INT).cpu((block, args) -> {
	});

	static final CountDownLatch RELEASE = new CountDownLatch(1);

	/** Holds its stream until {@link #RELEASE}: work in flight. */
	static final KernelSource HOLD = KernelSource.named("hold").params(ParamType.INT).cpu((block, args) -> {
		try {
			RELEASE.await(30, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	});

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=2", "gpu.cpu.threads=2", "gpu.kernels.locations=")
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, GpuMetricsAutoConfiguration.class,
				MetricsAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
				CompositeMeterRegistryAutoConfiguration.class))
		.withUserConfiguration(Kernels.class);

	@Test
	void aLaunchThatLoadsIsLoggedOnceAndALoadBehindWorkIsWarnedAndTimed(CapturedOutput output) throws Exception {
		this.runner.run((context) -> {
			GpuLauncher launcher = context.getBean(GpuLauncher.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			launcher.launch(AT_START, ONE, 1);
			launcher.currentStream().synchronize(); // nothing in flight for the next load
			launcher.launch(LATE, ONE, 1);
			launcher.launch(LATE, ONE, 1);
			launcher.currentStream().synchronize();
			assertThat(output).doesNotContain("kernel 'at_start'").doesNotContain("Kernel 'at_start'");
			assertThat(output.getOut().split("Kernel 'late' was loaded by its first launch", -1)).as("logged once").hasSize(2);
			assertThat(output).doesNotContain("Loading kernel 'late'");
			assertThat(output).contains("GpuContext.builder().kernels(...)").contains("a KernelSource bean");
			assertThat(registry.find(GpuMeterNames.KERNEL_LOAD_WAIT).timers()).as("no load waited yet").isEmpty();

			try (StreamLease busy = context.getBean(GpuContext.class).streams().acquire();
					DeviceBuffer unused = launcher.allocate(4, ElementType.BYTE)) {
				launcher.launch(busy.stream(), launcher.kernel("hold"), ONE, 1);
				launcher.launch(STALLED, ONE, 1);
				RELEASE.countDown();
				busy.stream().synchronize();
			}
			assertThat(output).contains("Loading kernel 'stalled' by its first launch, launch(KernelSource, ...), held thread");
			Timer wait = registry.get(GpuMeterNames.KERNEL_LOAD_WAIT).tags("kernel", "stalled", "trigger", "launch", "gpu", "0")
				.timer();
			assertThat(wait.count()).isEqualTo(1);
		});
	}

	@Configuration(proxyBeanMethods = false)
	static class Kernels {

		@Bean
		KernelSource atStart() {
			return AT_START;
		}

		@Bean
		KernelSource hold() {
			return HOLD;
		}

		@Bean
		GpuContextCustomizer reportEveryLoadBehindWork() {
			return (builder) -> builder.kernelLoadWaitThreshold(Duration.ZERO);
		}

	}

}
