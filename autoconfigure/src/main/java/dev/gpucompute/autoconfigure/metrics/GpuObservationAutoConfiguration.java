package dev.gpucompute.autoconfigure.metrics;

import io.micrometer.observation.ObservationRegistry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.GpuLauncher;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link EnableAutoConfiguration Auto-configuration} that observes kernel launches, when
 * {@code gpu.metrics.observe-launches=true}: every {@link GpuLauncher} bean is wrapped in an
 * {@link ObservedGpuLauncher} when an {@link ObservationRegistry} bean exists. Tracing then shows
 * launches as spans inside the requests that made them.
 *
 * <p>Off by default because an observation costs several microseconds per launch with Spring Boot's
 * default meter handler alone (about ten times a CPU-backend enqueue, and more than a CUDA kernel
 * enqueue), which the launch path cannot afford by default; the launch counters and device-time
 * timers of {@link GpuMetrics} cost next to nothing. Without Micrometer Observation, or with a no-op
 * registry, launchers are left as they are. Individual observations can also be switched off with
 * {@code management.observations.enable.gpu.kernel.launch=false}.
 */
@AutoConfiguration(after = GpuAutoConfiguration.class,
		afterName = "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration")
@ConditionalOnClass({ ObservationRegistry.class, GpuLauncher.class })
@ConditionalOnBooleanProperty("gpu.metrics.observe-launches")
public final class GpuObservationAutoConfiguration {

	@Bean
	static BeanPostProcessor gpuLauncherObservationPostProcessor(ObjectProvider<ObservationRegistry> registry,
			ObjectProvider<KernelLaunchObservationConvention> convention) {
		return new BeanPostProcessor() {

			@Override
			public Object postProcessAfterInitialization(Object bean, String beanName) {
				if (bean instanceof GpuLauncher launcher && !(bean instanceof ObservedGpuLauncher)) {
					ObservationRegistry observations = registry.getIfUnique();
					if (observations != null && !observations.isNoop()) {
						return new ObservedGpuLauncher(launcher, observations, convention.getIfUnique());
					}
				}
				return bean;
			}

		};
	}

}
