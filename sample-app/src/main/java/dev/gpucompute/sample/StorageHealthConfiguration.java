package dev.gpucompute.sample;

import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.sample.search.CollectionStore;

/**
 * The {@code storage} health component ({@link StorageHealthIndicator}), unless
 * {@code management.health.storage.enabled=false}. Boot's own {@code diskSpace} component watches the
 * same directory: {@link DataDirectoryDiskSpace} points it at {@code sample.data-dir}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnEnabledHealthIndicator("storage")
final class StorageHealthConfiguration {

	@Bean
	StorageHealthIndicator storageHealthIndicator(CollectionStore store, SampleProperties properties) {
		return new StorageHealthIndicator(store, properties.getStorage().getHealth().getMinFree());
	}

}
