package dev.gpucompute.autoconfigure.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.GpuListener;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for the GPU meters: a
 * {@link MicrometerGpuListener} that the GPU auto-configuration passes to the {@link GpuContext} (as
 * it does with every {@link GpuListener} bean), and a {@link GpuMetrics} binder that Spring Boot binds
 * to the meter registry. Backs off without Micrometer or without a meter registry.
 */
@AutoConfiguration(after = GpuAutoConfiguration.class,
		afterName = "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration")
@ConditionalOnClass({ MeterRegistry.class, MeterBinder.class, GpuContext.class })
@ConditionalOnBean(MeterRegistry.class)
public final class GpuMetricsAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	MicrometerGpuListener micrometerGpuListener() {
		return new MicrometerGpuListener();
	}

	@Bean
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuMetrics gpuMetrics(GpuContext context, ObjectProvider<MicrometerGpuListener> listener) {
		return new GpuMetrics(context, listener.getIfAvailable());
	}

}
