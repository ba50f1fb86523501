package dev.gpucompute.autoconfigure.actuate;

import java.util.LinkedHashMap;
import java.util.Map;

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

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for the {@code gpu} health contributor: a
 * {@link GpuHealthIndicator} with one device; with several ({@code gpu.devices}), a composite with
 * one {@link GpuHealthIndicator} per device, named by its ordinal ({@code /actuator/health/gpu/1}), as
 * Spring Boot does for several data sources. Spring Boot's status aggregator then gives the
 * {@code gpu} status: {@code DOWN} as soon as one device is. Turn it off with
 * {@code management.health.gpu.enabled=false}.
 */
@AutoConfiguration(after = GpuAutoConfiguration.class)
@ConditionalOnClass({ HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class, GpuContext.class })
@ConditionalOnSingleCandidate(GpuContext.class)
@ConditionalOnEnabledHealthIndicator("gpu")
public final class GpuHealthContributorAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = { "gpuHealthIndicator", "gpuHealthContributor" })
	HealthContributor gpuHealthIndicator(GpuContext context, ObjectProvider<GpuDevices> devices) {
		GpuDevices group = devices.getIfUnique();
		if (group == null || group.primary() != context || group.size() == 1) {
			return new GpuHealthIndicator(context);
		}
		Map<String, GpuHealthIndicator> perDevice = new LinkedHashMap<>();
		for (int ordinal : group.ordinals()) {
			perDevice.put(Integer.toString(ordinal), new GpuHealthIndicator(group.get(ordinal)));
		}
		return CompositeHealthContributor.fromMap(perDevice);
	}

}
