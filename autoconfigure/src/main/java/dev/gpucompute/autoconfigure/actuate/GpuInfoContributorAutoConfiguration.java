package dev.gpucompute.autoconfigure.actuate;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.info.ConditionalOnEnabledInfoContributor;
import org.springframework.boot.actuate.info.InfoContributor;
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
 * {@link EnableAutoConfiguration Auto-configuration} for the {@code gpu} info contributor
 * ({@link GpuInfoContributor}). On by default like the build and git contributors; turn it off with
 * {@code management.info.gpu.enabled=false}.
 */
@AutoConfiguration(after = GpuAutoConfiguration.class)
@ConditionalOnClass({ InfoContributor.class, ConditionalOnEnabledInfoContributor.class, GpuContext.class })
@ConditionalOnSingleCandidate(GpuContext.class)
@ConditionalOnEnabledInfoContributor("gpu")
public final class GpuInfoContributorAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	GpuInfoContributor gpuInfoContributor(GpuContext context, ObjectProvider<GpuDevices> devices) {
		GpuDevices group = devices.getIfUnique();
		return (group != null && group.primary() == context) ? new GpuInfoContributor(group)
				: new GpuInfoContributor(context);
	}

}
