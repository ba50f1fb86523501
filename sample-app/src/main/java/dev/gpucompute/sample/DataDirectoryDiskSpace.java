package dev.gpucompute.sample;

import java.util.Map;

import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Points Boot's {@code diskSpace} health component at the data directory: it adds
 * {@code management.health.diskspace.path=${sample.data-dir:data}} as the environment's last
 * property source, so every setting a user makes (command line, environment, any configuration
 * file, SpringApplication's default properties) wins over it. Without it the component watches the
 * process's working directory, which may be another file system than the one that fills up.
 * Registered in {@code META-INF/spring.factories}; runs after the configuration files are loaded.
 */
public final class DataDirectoryDiskSpace implements EnvironmentPostProcessor, Ordered {

	/** Name of the property source added. */
	public static final String SOURCE = "sampleDataDirectoryDiskSpace";

	@Override
	public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
		if (!environment.getPropertySources().contains(SOURCE)) {
			environment.getPropertySources()
				.addLast(new MapPropertySource(SOURCE,
						Map.of("management.health.diskspace.path", "${sample.data-dir:data}")));
		}
	}

	@Override
	public int getOrder() {
		return Ordered.LOWEST_PRECEDENCE;
	}

}
