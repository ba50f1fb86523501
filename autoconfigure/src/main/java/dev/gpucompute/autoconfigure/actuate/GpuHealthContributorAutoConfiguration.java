package dev.gpucompute.autoconfigure.actuate;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for the {@code gpu} health contributor
 * ({@link GpuHealthIndicator}). Turn it off with {@code management.health.gpu.enabled=false}.
 */
@AutoConfiguration(after = GpuAutoConfiguration.class)
@ConditionalOnClass({ HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class, GpuContext.class })
@ConditionalOnSingleCandidate(GpuContext.class)
@ConditionalOnEnabledHealthIndicator("gpu")
public final class GpuHealthContributorAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = { "gpuHealthIndicator", "gpuHealthContributor" })
	GpuHealthIndicator gpuHealthIndicator(GpuContext context) {
		return new GpuHealthIndicator(context);
	}

}
