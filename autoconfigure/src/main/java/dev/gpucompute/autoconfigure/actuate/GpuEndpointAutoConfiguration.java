package dev.gpucompute.autoconfigure.actuate;

import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for the {@link GpuEndpoint} ({@code /actuator/gpu}).
 * Like every Actuator endpoint it is only reachable over HTTP once exposed
 * ({@code management.endpoints.web.exposure.include=gpu}).
 */
@AutoConfiguration(after = GpuAutoConfiguration.class)
@ConditionalOnClass({ Endpoint.class, ConditionalOnAvailableEndpoint.class, GpuContext.class })
@ConditionalOnAvailableEndpoint(GpuEndpoint.class)
public final class GpuEndpointAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnSingleCandidate(GpuContext.class)
	GpuEndpoint gpuEndpoint(GpuContext context) {
		return new GpuEndpoint(context);
	}

}
