package dev.gpucompute.autoconfigure.metrics;

import java.util.Map;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.micrometer.metrics.autoconfigure.MeterRegistryCustomizer;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for the GPU meters: a
 * {@link MicrometerGpuListener} that the GPU auto-configuration passes to the primary
 * {@link GpuContext}, and a {@link GpuMetrics} binder for it that Spring Boot binds to the meter
 * registry; with several devices ({@code gpu.devices}), a listener of its own for every other device
 * ({@link MicrometerGpuListeners}) and a {@link GpuDevicesMetrics} binder for their meters. Every
 * meter carries its device's ordinal and UUID as tags. Backs off without Micrometer or without a
 * meter registry.
 *
 * <p>Histograms follow Spring Boot's {@code management.metrics.distribution.*} properties. Only
 * Prometheus registries get default buckets ({@link GpuHistogramBuckets}) for the two timers the
 * Grafana dashboard reads quantiles from, and only while those properties say nothing about them;
 * other registries get no buckets unless configured.
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
	@ConditionalOnMissingBean
	@ConditionalOnBean(MicrometerGpuListener.class)
	MicrometerGpuListeners micrometerGpuListeners(MicrometerGpuListener primary) {
		return new MicrometerGpuListeners(primary);
	}

	@Bean
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuMetrics gpuMetrics(GpuContext context, ObjectProvider<MicrometerGpuListener> listener) {
		return new GpuMetrics(context, listener.getIfAvailable());
	}

	@Bean
	@ConditionalOnSingleCandidate(GpuDevices.class)
	@ConditionalOnMissingBean
	GpuDevicesMetrics gpuDevicesMetrics(GpuDevices devices, ObjectProvider<GpuContext> primary,
			ObjectProvider<MicrometerGpuListeners> listeners) {
		MicrometerGpuListeners perDevice = listeners.getIfAvailable();
		return new GpuDevicesMetrics(devices, primary.getIfUnique(),
				(ordinal) -> (perDevice != null) ? perDevice.listener(ordinal) : null);
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass({ PrometheusMeterRegistry.class, MeterRegistryCustomizer.class, MetricsProperties.class })
	static class PrometheusHistogramConfiguration {

		@Bean
		MeterRegistryCustomizer<PrometheusMeterRegistry> gpuPrometheusHistogramBuckets(
				ObjectProvider<MetricsProperties> properties) {
			MetricsProperties metrics = properties.getIfAvailable(MetricsProperties::new);
			return (registry) -> registry.config()
				.meterFilter(new GpuHistogramBuckets((id) -> configuredByProperties(metrics.getDistribution(), id)));
		}

		/**
		 * Whether {@code management.metrics.distribution.slo} or {@code .percentiles-histogram}
		 * covers the meter, looked up as Spring Boot's own filter does (by name and its dotted
		 * prefixes, {@code all} for the histogram), which applies them after this default.
		 */
		private static boolean configuredByProperties(MetricsProperties.Distribution distribution, Meter.Id id) {
			return lookup(distribution.getSlo(), id.getName()) != null
					|| lookup(distribution.getPercentilesHistogram(), id.getName()) != null
					|| distribution.getPercentilesHistogram().get("all") != null;
		}

		private static <T> @Nullable T lookup(Map<String, T> values, String name) {
			String candidate = name;
			while (!candidate.isEmpty()) {
				T value = values.get(candidate);
				if (value != null) {
					return value;
				}
				int lastDot = candidate.lastIndexOf('.');
				candidate = (lastDot != -1) ? candidate.substring(0, lastDot) : "";
			}
			return null;
		}

	}

}
