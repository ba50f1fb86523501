package dev.gpucompute.autoconfigure;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.origin.Origin;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.Environment;

/**
 * Where a property was set: the {@link Origin} Spring Boot records for each value (a file and
 * line, an environment variable, a command-line argument), found the way the binder finds the
 * value (relaxed names, highest-precedence source first). Start-up reports use it to point at the
 * line to fix.
 */
public final class PropertyOrigins {

	private PropertyOrigins() {
	}

	/**
	 * The value of {@code name} that binding uses, with its origin, or {@code null} when no
	 * property source sets it.
	 * @param environment the application's environment
	 * @param name a property name in canonical form ({@code gpu.kernels.locations[0]})
	 */
	public static @Nullable ConfigurationProperty find(Environment environment, String name) {
		if (!(environment instanceof ConfigurableEnvironment configurable)
				|| !ConfigurationPropertyName.isValid(name)) {
			return null;
		}
		ConfigurationPropertyName propertyName = ConfigurationPropertyName.of(name);
		for (ConfigurationPropertySource source : ConfigurationPropertySources.get(configurable)) {
			ConfigurationProperty property = source.getConfigurationProperty(propertyName);
			if (property != null) {
				return property;
			}
		}
		return null;
	}

	/**
	 * Where {@code name} was set, or {@code null} when it was not set or its source records no
	 * origin.
	 */
	public static @Nullable Origin origin(Environment environment, String name) {
		ConfigurationProperty property = find(environment, name);
		return (property != null) ? property.getOrigin() : null;
	}

}
