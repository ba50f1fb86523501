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
import org.springframework.boot.context.properties.ConfigurationPropertiesBindHandlerAdvisor;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.validation.ValidationBindHandler;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.core.io.ResourceLoader;
import org.springframework.core.io.support.ResourcePatternUtils;

import dev.gpucompute.EventRegistry;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamPool;
import dev.gpucompute.autoconfigure.kernels.GpuKernels;
import dev.gpucompute.autoconfigure.kernels.GpuKernels.KernelLocation;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.graph.GpuGraphs;

/**
 * {@link EnableAutoConfiguration Auto-configuration} for GPU compute: {@link GpuDevices}, one
 * {@link GpuContext} per device named by {@code gpu.devices} (by default the one device
 * {@code gpu.device} names), on the backend chosen by {@code gpu.backend}; the primary (first)
 * device's context, {@link StreamPool}, {@link EventRegistry} and {@link GpuLauncher}; the kernels
 * found under {@code gpu.kernels.locations} and in {@link KernelSource} beans, loaded on every
 * device; {@link GpuBatchers}, which creates the batchers configured under {@code gpu.batching}; and
 * a {@link GpuLifecycle} that closes the batchers and drains every device after the web server has
 * finished its requests. Every bean backs off when the application defines its own; {@code gpu.enabled=false}
 * turns all of them off.
 *
 * <p>Only the {@link GpuDevices} bean closes the contexts: the {@link GpuContext} bean is a view of
 * its primary device, and the StreamPool, EventRegistry and GpuLauncher beans are views of that
 * context, none closed on its own. Spring destroys the beans that depend on the devices first, then
 * the {@link GpuDevices}, which releases every device. An application that defines its own
 * {@link GpuContext} gets no {@link GpuDevices} bean; one that defines several contexts gets the
 * beans that need one built on the primary one, or not at all.
 */
@AutoConfiguration
@ConditionalOnClass(GpuContext.class)
@ConditionalOnBooleanProperty(name = "gpu.enabled", matchIfMissing = true)
@EnableConfigurationProperties(GpuProperties.class)
public final class GpuAutoConfiguration {

	/**
	 * Checks the {@code gpu.*} values against the runtime's rules when {@link GpuProperties} is bound
	 * ({@link GpuPropertiesValidator}); other configuration properties are left alone (the validator
	 * supports only {@link GpuProperties}).
	 */
	@Bean
	static ConfigurationPropertiesBindHandlerAdvisor gpuPropertiesValidation() {
		GpuPropertiesValidator validator = new GpuPropertiesValidator();
		return (handler) -> new ValidationBindHandler(handler, validator);
	}

	/** Applies {@code gpu.unknown-properties} before any bean exists, so a misspelled key fails before a device opens. */
	@Bean
	static UnknownGpuProperties gpuUnknownProperties() {
		return new UnknownGpuProperties();
	}

	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean({ GpuDevices.class, GpuContext.class })
	GpuDevices gpuDevices(GpuProperties properties, ObjectProvider<GpuListener> listeners,
			ObjectProvider<GpuListenerFactory> listenerFactories, ObjectProvider<GpuContextCustomizer> customizers,
			Environment environment) {
		return new GpuContextFactory(properties, listeners.orderedStream().toList(),
				listenerFactories.orderedStream().toList(), customizers.orderedStream().toList(), environment)
			.open();
	}

	/** The primary device's context; the {@link GpuDevices} bean closes it. */
	@Bean(destroyMethod = "")
	@ConditionalOnMissingBean
	@ConditionalOnSingleCandidate(GpuDevices.class)
	GpuContext gpuContext(GpuDevices devices) {
		return devices.primary();
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
	GpuKernels gpuKernels(GpuContext context, ObjectProvider<GpuDevices> devices, GpuProperties properties,
			ResourceLoader resourceLoader, ListableBeanFactory beanFactory, Environment environment) {
		List<GpuLauncher> launchers = contextsOf(context, devices).stream().map(GpuContext::launcher).toList();
		return GpuKernels.load(launchers, context.backend(),
				kernelLocations(properties.getKernels().getLocations(), environment),
				ResourcePatternUtils.getResourcePatternResolver(resourceLoader),
				beanFactory.getBeansOfType(KernelSource.class));
	}

	/**
	 * The contexts of the devices {@code context} is the primary one of, or {@code context} alone
	 * when it does not come from the {@link GpuDevices} bean (the application defined it).
	 */
	static List<GpuContext> contextsOf(GpuContext context, ObjectProvider<GpuDevices> devices) {
		GpuDevices group = devices.getIfUnique();
		return (group != null && group.primary() == context) ? group.contexts() : List.of(context);
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

	/** Creates the named batchers of {@code gpu.batching} on the primary device's context. */
	@Bean
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuBatchers gpuBatchers(GpuContext context, GpuProperties properties) {
		return new GpuBatchers(context, properties.getBatching());
	}

	/**
	 * The primary device's graphs ({@code dev.gpucompute.graph}), whose caches hold
	 * {@code gpu.graphs.cache-size} graphs unless the code says otherwise.
	 */
	@Bean
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuGraphs gpuGraphs(GpuContext context, GpuProperties properties) {
		return GpuGraphs.of(context).withDefaultCacheSize(GpuSettingsMapping.graphs(properties.getGraphs()).cacheSize());
	}

	@Bean
	@ConditionalOnSingleCandidate(GpuContext.class)
	@ConditionalOnMissingBean
	GpuLifecycle gpuLifecycle(GpuContext context, ObjectProvider<GpuDevices> devices, GpuProperties properties) {
		GpuDevices group = devices.getIfUnique();
		return (group != null && group.primary() == context)
				? new GpuLifecycle(group, properties.getShutdown().getDrainTimeout())
				: new GpuLifecycle(context, properties.getShutdown().getDrainTimeout());
	}

}
