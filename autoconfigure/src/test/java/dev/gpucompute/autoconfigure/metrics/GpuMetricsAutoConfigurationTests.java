package dev.gpucompute.autoconfigure.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.prometheus.PrometheusMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link GpuMetricsAutoConfiguration}: meters bound to the application's registry, the listener
 * handed to the context, histogram buckets that follow {@code management.metrics.distribution.*}
 * (a default for Prometheus only), and backing off without Micrometer.
 */
class GpuMetricsAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=1", "gpu.streams.max-size=2",
				"gpu.cpu.threads=1", "gpu.kernels.locations=")
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class, GpuMetricsAutoConfiguration.class));

	private final ApplicationContextRunner withRegistry = this.runner.withConfiguration(AutoConfigurations.of(
			MetricsAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class,
			CompositeMeterRegistryAutoConfiguration.class));

	private final ApplicationContextRunner withPrometheus = this.runner.withConfiguration(AutoConfigurations.of(
			MetricsAutoConfiguration.class, PrometheusMetricsExportAutoConfiguration.class,
			CompositeMeterRegistryAutoConfiguration.class));

	@Test
	void bindsTheMetersAndHandsTheListenerToTheContext() {
		this.withRegistry.withUserConfiguration(KernelConfiguration.class).run((context) -> {
			assertThat(context).hasSingleBean(MicrometerGpuListener.class).hasSingleBean(GpuMetrics.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			assertThat(context.getBean(MicrometerGpuListener.class).isBound()).isTrue();
			// The start-up kernel (a KernelSource bean) has its series before its first launch.
			assertThat(registry.get(GpuMeterNames.KERNEL_LAUNCHES).tags("kernel", "noop", "outcome", "success")
				.functionCounter()
				.count()).isZero();
			GpuLauncher launcher = context.getBean(GpuLauncher.class);
			launcher.launch(launcher.kernel("noop"), LaunchConfig.linear(1, 1), 1);
			launcher.launch(launcher.kernel("noop"), LaunchConfig.linear(1, 1), 1);
			launcher.currentStream().synchronize();
			assertThat(registry.get(GpuMeterNames.KERNEL_LAUNCHES).tags("kernel", "noop", "outcome", "success")
				.functionCounter()
				.count()).isEqualTo(2);
			// The acquire timer only moves if the context was opened with the Micrometer listener.
			try (StreamLease lease = context.getBean(GpuContext.class).streams().acquire()) {
				assertThat(registry.get(GpuMeterNames.STREAMS_ACQUIRE).timer().count()).isEqualTo(1);
				assertThat(registry.get(GpuMeterNames.STREAMS_ACTIVE).tag("gpu", "0").gauge().value()).isEqualTo(1);
			}
			assertThat(registry.get(GpuMeterNames.STREAMS_USAGE).timer().count()).isEqualTo(1);
			assertThat(registry.get(GpuMeterNames.STREAMS_MAX).gauge().value()).isEqualTo(2);
		});
	}

	@Test
	void metersCanBeDeniedByName() {
		this.withRegistry.withPropertyValues("management.metrics.enable.gpu=false").run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			assertThat(registry.find(GpuMeterNames.STREAMS_ACTIVE).gauge()).isNull();
			assertThat(registry.find(GpuMeterNames.KERNEL_LAUNCHES).functionCounters()).isEmpty();
		});
	}

	@Test
	void backsOffWithoutMicrometer() {
		this.runner.withClassLoader(new FilteredClassLoader(MeterRegistry.class)).run((context) -> {
			assertThat(context).hasSingleBean(GpuContext.class)
				.doesNotHaveBean(MicrometerGpuListener.class)
				.doesNotHaveBean(GpuMetrics.class);
		});
	}

	@Test
	void backsOffWithoutAMeterRegistry() {
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(GpuContext.class)
				.doesNotHaveBean(MicrometerGpuListener.class)
				.doesNotHaveBean(GpuMetrics.class);
		});
	}

	@Test
	void backsOffWithoutAGpuContext() {
		this.withRegistry.withPropertyValues("gpu.enabled=false").run((context) -> {
			assertThat(context).doesNotHaveBean(GpuContext.class).doesNotHaveBean(GpuMetrics.class);
		});
	}

	@Test
	void prometheusGetsTheDashboardBucketsForTwoTimersOnly() {
		this.withPrometheus.withUserConfiguration(KernelConfiguration.class).run((context) -> {
			String scrape = context.getBean(PrometheusMeterRegistry.class).scrape();
			// 25 bounds from 1 us to 60 s, plus +Inf
			assertThat(series(scrape, "gpu_kernel_duration_seconds_bucket")).isEqualTo(26);
			assertThat(series(scrape, "gpu_streams_acquire_seconds_bucket")).isEqualTo(26);
			assertThat(scrape).contains("le=\"1.0E-6\"").contains("le=\"60.0\"");
			assertThat(series(scrape, "gpu_streams_usage_seconds_bucket")).isZero();
		});
	}

	@Test
	void otherRegistriesGetNoBucketsByDefault() {
		this.withRegistry.withUserConfiguration(KernelConfiguration.class).run((context) -> {
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			for (Timer timer : List.of(registry.get(GpuMeterNames.KERNEL_DURATION).timer(),
					registry.get(GpuMeterNames.STREAMS_ACQUIRE).timer(), registry.get(GpuMeterNames.STREAMS_USAGE).timer())) {
				assertThat(timer.takeSnapshot().histogramCounts()).as(timer.getId().getName()).isEmpty();
				// count, total time, max: no bucket series
				assertThat(timer.measure()).as(timer.getId().getName()).hasSize(3);
			}
		});
	}

	@Test
	void sloPropertyReplacesTheDefaultBuckets() {
		this.withPrometheus.withUserConfiguration(KernelConfiguration.class)
			.withPropertyValues("management.metrics.distribution.slo.gpu.kernel.duration=100us,1ms,10ms")
			.run((context) -> {
				String scrape = context.getBean(PrometheusMeterRegistry.class).scrape();
				assertThat(series(scrape, "gpu_kernel_duration_seconds_bucket")).isEqualTo(4);
				assertThat(series(scrape, "gpu_streams_acquire_seconds_bucket")).isEqualTo(26);
			});
	}

	@Test
	void percentilesHistogramPropertyTurnsTheDefaultOff() {
		this.withPrometheus.withUserConfiguration(KernelConfiguration.class)
			.withPropertyValues("management.metrics.distribution.percentiles-histogram.gpu=false")
			.run((context) -> {
				String scrape = context.getBean(PrometheusMeterRegistry.class).scrape();
				assertThat(series(scrape, "gpu_kernel_duration_seconds_bucket")).isZero();
				assertThat(series(scrape, "gpu_streams_acquire_seconds_bucket")).isZero();
				assertThat(scrape).contains("gpu_kernel_duration_seconds_count{");
			});
	}

	@Test
	void histogramPropertiesApplyToOtherRegistriesToo() {
		this.withRegistry.withUserConfiguration(KernelConfiguration.class)
			.withPropertyValues("management.metrics.distribution.slo.gpu.kernel.duration=1ms,10ms")
			.run((context) -> assertThat(context.getBean(MeterRegistry.class)
				.get(GpuMeterNames.KERNEL_DURATION)
				.timer()
				.takeSnapshot()
				.histogramCounts()).hasSize(2));
	}

	private static long series(String scrape, String name) {
		return scrape.lines().filter((line) -> line.startsWith(name + "{")).count();
	}

	@Configuration(proxyBeanMethods = false)
	static class KernelConfiguration {

		@Bean
		KernelSource noop() {
			return KernelSource.named("noop").params(ParamType.INT).cpu((block, args) -> {
			});
		}

	}

}
