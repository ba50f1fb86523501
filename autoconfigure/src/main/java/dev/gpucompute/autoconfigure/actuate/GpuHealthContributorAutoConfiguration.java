package dev.gpucompute.autoconfigure.actuate;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for the GPU health contributors:
 * <ul>
 * <li>{@code gpu}: the devices' contexts ({@link GpuHealthIndicator}: {@code DOWN} once closed or
 * after a CUDA sticky error); turn it off with {@code management.health.gpu.enabled=false};</li>
 * <li>{@code gpuStreams}: the stream pools ({@link GpuStreamsHealthIndicator}: {@code DOWN} while a
 * pool is stalled); turn it off with {@code management.health.gpu-streams.enabled=false}.</li>
 * </ul>
 * With one device each is an indicator; with several ({@code gpu.devices}), a composite with one
 * indicator per device, named by its ordinal ({@code /actuator/health/gpu/1}), as Spring Boot does for
 * several data sources; Spring Boot's status aggregator then gives the composite's status:
 * {@code DOWN} as soon as one device is. {@link GpuHealthGroups} adds {@code gpu} to the liveness
 * probe group and both to the readiness group, unless the application configured those groups.
 */
@AutoConfiguration(after = GpuAutoConfiguration.class,
		afterName = "org.springframework.boot.health.autoconfigure.actuate.endpoint.AvailabilityProbesAutoConfiguration")
@ConditionalOnClass({ HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class, GpuContext.class })
@ConditionalOnSingleCandidate(GpuContext.class)
public final class GpuHealthContributorAutoConfiguration {

	@Bean
	@ConditionalOnEnabledHealthIndicator("gpu")
	@ConditionalOnMissingBean(name = { "gpuHealthIndicator", "gpuHealthContributor" })
	HealthContributor gpuHealthIndicator(GpuContext context, ObjectProvider<GpuDevices> devices) {
		return perDevice(context, devices, GpuHealthIndicator::new);
	}

	@Bean
	@ConditionalOnEnabledHealthIndicator("gpu-streams")
	@ConditionalOnMissingBean(name = { "gpuStreamsHealthIndicator", "gpuStreamsHealthContributor" })
	HealthContributor gpuStreamsHealthIndicator(GpuContext context, ObjectProvider<GpuDevices> devices) {
		return perDevice(context, devices, GpuStreamsHealthIndicator::new);
	}

	@Bean
	@ConditionalOnMissingBean
	GpuHealthGroups gpuHealthGroups(Environment environment) {
		return new GpuHealthGroups(environment);
	}

	/** One indicator, or with several devices a composite of one indicator per device named by its ordinal. */
	private static HealthContributor perDevice(GpuContext context, ObjectProvider<GpuDevices> devices,
			Function<GpuContext, HealthIndicator> indicator) {
		GpuDevices group = devices.getIfUnique();
		if (group == null || group.primary() != context || group.size() == 1) {
			return indicator.apply(context);
		}
		Map<String, HealthIndicator> perDevice = new LinkedHashMap<>();
		for (int ordinal : group.ordinals()) {
			perDevice.put(Integer.toString(ordinal), indicator.apply(group.get(ordinal)));
		}
		return CompositeHealthContributor.fromMap(perDevice);
	}

}
