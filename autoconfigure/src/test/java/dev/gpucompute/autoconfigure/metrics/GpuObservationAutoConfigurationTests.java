package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.UnsupportedBackendOperationException;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link GpuObservationAutoConfiguration}: launches become observations (spans for tracing users),
 * children of the observation current on the launching thread.
 */
class GpuObservationAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=1", "gpu.cpu.threads=1", "gpu.kernels.locations=",
				"gpu.metrics.observe-launches=true")
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, ObservationAutoConfiguration.class,
				GpuObservationAutoConfiguration.class))
		.withUserConfiguration(RecordingConfiguration.class);

	@Test
	void launchIsObservedAsAChildOfTheCurrentObservation() {
		this.runner.run((context) -> {
			GpuLauncher launcher = context.getBean(GpuLauncher.class);
			assertThat(launcher).isInstanceOf(ObservedGpuLauncher.class);
			ObservationRegistry registry = context.getBean(ObservationRegistry.class);
			Recorder recorder = context.getBean(Recorder.class);
			Observation request = Observation.start("request", registry);
			try (Observation.Scope scope = request.openScope()) {
				launcher.launch(launcher.kernel("noop"), LaunchConfig.linear(1, 1), 1);
			}
			request.stop();
			launcher.currentStream().synchronize();
			KernelLaunchContext launch = recorder.launches().get(0);
			assertThat(recorder.launches()).hasSize(1);
			assertThat(launch.getName()).isEqualTo("gpu.kernel.launch");
			assertThat(launch.getContextualName()).isEqualTo("gpu launch noop");
			assertThat(launch.getLowCardinalityKeyValues()).containsExactlyInAnyOrder(KeyValue.of("kernel", "noop"),
					KeyValue.of("outcome", "success"));
			assertThat(launch.getHighCardinalityKeyValue("stream")).isNotNull();
			assertThat(launch.getParentObservation()).isSameAs(request);
			assertThat(launch.getError()).isNull();
		});
	}

	@Test
	void rejectedLaunchIsAnErrorObservation() {
		this.runner.run((context) -> {
			GpuLauncher launcher = context.getBean(GpuLauncher.class);
			KernelSource cudaOnly = KernelSource.named("cuda_only").params(ParamType.INT).cuda("x");
			assertThatExceptionOfType(UnsupportedBackendOperationException.class)
				.isThrownBy(() -> launcher.launch(cudaOnly, LaunchConfig.linear(1, 1), 1));
			KernelLaunchContext launch = context.getBean(Recorder.class).launches().get(0);
			assertThat(launch.getLowCardinalityKeyValue("outcome").getValue()).isEqualTo("error");
			assertThat(launch.getError()).isInstanceOf(UnsupportedBackendOperationException.class);
		});
	}

	@Test
	void observationCanBeSwitchedOffByName() {
		this.runner.withPropertyValues("management.observations.enable.gpu.kernel.launch=false").run((context) -> {
			GpuLauncher launcher = context.getBean(GpuLauncher.class);
			launcher.launch(launcher.kernel("noop"), LaunchConfig.linear(1, 1), 1);
			launcher.currentStream().synchronize();
			assertThat(context.getBean(Recorder.class).launches()).isEmpty();
		});
	}

	@Test
	void offByDefault() {
		this.runner.withPropertyValues("gpu.metrics.observe-launches=false").run((context) -> {
			assertThat(context).doesNotHaveBean("gpuLauncherObservationPostProcessor");
			assertThat(context.getBean(GpuLauncher.class)).isNotInstanceOf(ObservedGpuLauncher.class);
		});
		new ApplicationContextRunner().withPropertyValues("gpu.backend=cpu", "gpu.kernels.locations=")
			.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, ObservationAutoConfiguration.class,
					GpuObservationAutoConfiguration.class))
			.run((context) -> assertThat(context).doesNotHaveBean("gpuLauncherObservationPostProcessor"));
	}

	@Test
	void launcherIsLeftAloneWithoutObservationRegistry() {
		new ApplicationContextRunner()
			.withPropertyValues("gpu.backend=cpu", "gpu.kernels.locations=", "gpu.metrics.observe-launches=true")
			.withConfiguration(
					AutoConfigurations.of(GpuAutoConfiguration.class, GpuObservationAutoConfiguration.class))
			.run((context) -> assertThat(context.getBean(GpuLauncher.class)).isNotInstanceOf(ObservedGpuLauncher.class));
	}

	@Test
	void backsOffWithoutMicrometerObservation() {
		this.runner.withClassLoader(new FilteredClassLoader(ObservationRegistry.class))
			.run((context) -> assertThat(context).doesNotHaveBean("gpuLauncherObservationPostProcessor"));
	}

	@Configuration(proxyBeanMethods = false)
	static class RecordingConfiguration {

		@Bean
		Recorder recorder() {
			return new Recorder();
		}

		@Bean
		KernelSource noop() {
			return KernelSource.named("noop").params(ParamType.INT).cpu((block, args) -> {
			});
		}

	}

	/** Keeps every stopped kernel-launch observation. */
	static class Recorder implements ObservationHandler<KernelLaunchContext> {

		private final List<KernelLaunchContext> launches = new CopyOnWriteArrayList<>();

		@Override
		public void onStop(KernelLaunchContext context) {
			this.launches.add(context);
		}

		@Override
		public boolean supportsContext(Observation.Context context) {
			return context instanceof KernelLaunchContext;
		}

		List<KernelLaunchContext> launches() {
			return this.launches;
		}

	}

}
