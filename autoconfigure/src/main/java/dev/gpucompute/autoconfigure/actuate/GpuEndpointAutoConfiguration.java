package dev.gpucompute.autoconfigure.actuate;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;

import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for the {@link GpuEndpoint} ({@code /actuator/gpu}),
 * reporting on every device of the {@link GpuDevices} bean whose primary device is the
 * {@link GpuContext} bean, or on that context alone.
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
	GpuEndpoint gpuEndpoint(GpuContext context, ObjectProvider<GpuDevices> devices) {
		GpuDevices group = devices.getIfUnique();
		return (group != null && group.primary() == context) ? new GpuEndpoint(group) : new GpuEndpoint(context);
	}

}
