package dev.gpucompute.autoconfigure;

import java.util.ArrayList;
import java.util.List;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;
import org.springframework.core.io.support.ResourcePatternUtils;

import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuListener;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamPool;
import dev.gpucompute.autoconfigure.kernels.GpuKernels;
import dev.gpucompute.autoconfigure.kernels.GpuKernels.KernelLocation;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for GPU compute: a {@link GpuContext} on the
 * backend chosen by {@code gpu.backend}, its {@link StreamPool}, {@link EventRegistry} and
 * {@link GpuLauncher}, the kernels found under {@code gpu.kernels.locations} and in
 * {@link KernelSource} beans, and a {@link GpuLifecycle} that drains the GPU after the web server
 * has finished its requests. Every bean backs off when the application defines its own;
 * {@code gpu.enabled=false} turns all of them off.
 *
 * <p>The StreamPool, EventRegistry and GpuLauncher beans are views of the context and are not
 * closed on their own: the context releases everything when it is destroyed. When the application
 * defines several contexts, the beans that need one are built on the primary one, or not at all.
 */
@AutoConfiguration
@ConditionalOnClass(GpuContext.class)
@ConditionalOnBooleanProperty(name = "gpu.enabled", matchIfMissing = true)
@EnableConfigurationProperties(GpuProperties.class)
public final class GpuAutoConfiguration {

	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean
	GpuContext gpuContext(GpuProperties properties, ObjectProvider<GpuListener> listeners,
			ObjectProvider<GpuContextCustomizer> customizers) {
		return new GpuContextFactory(properties, listeners.orderedStream().toList(),
				customizers.orderedStream().toList())
			.open();
	}

	@Bean(destroyMethod = "")
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	StreamPool gpuStreamPool(GpuContext context) {
		return context.streams();
	}

	@Bean(destroyMethod = "")
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	EventRegistry gpuEventRegistry(GpuContext context) {
		return context.events();
	}

	@Bean
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuKernels gpuKernels(GpuContext context, GpuProperties properties, ResourceLoader resourceLoader,
			ListableBeanFactory beanFactory, Environment environment) {
		return GpuKernels.load(context.launcher(), context.backend(),
				kernelLocations(properties.getKernels().getLocations(), environment),
				ResourcePatternUtils.getResourcePatternResolver(resourceLoader),
				beanFactory.getBeansOfType(KernelSource.class));
	}

	/**
	 * The kernel locations with where each was configured; locations the application did not set
	 * (the default) may be absent, the others must exist.
	 */
	private static List<KernelLocation> kernelLocations(List<String> locations, Environment environment) {
		ConfigurationProperty whole = PropertyOrigins.find(environment, "gpu.kernels.locations");
		List<KernelLocation> result = new ArrayList<>();
		for (int i = 0; i < locations.size(); i++) {
			ConfigurationProperty element = PropertyOrigins.find(environment, "gpu.kernels.locations[" + i + "]");
			ConfigurationProperty setting = (element != null) ? element : whole;
			result.add(new KernelLocation(locations.get(i), setting != null,
					(setting != null) ? setting.getOrigin() : null));
		}
		return result;
	}

	/**
	 * The launcher; it takes the {@link GpuKernels} bean so that whoever injects the launcher finds
	 * every start-up kernel loaded.
	 */
	@Bean(destroyMethod = "")
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuLauncher gpuLauncher(GpuContext context, GpuKernels kernels) {
		return context.launcher();
	}

	@Bean
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuLifecycle gpuLifecycle(GpuContext context, GpuProperties properties) {
		return new GpuLifecycle(context, properties.getShutdown().getDrainTimeout());
	}

}
