package dev.gpucompute.sample.demo;

import io.micrometer.core.instrument.MeterRegistry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.sample.SampleProperties;
import dev.gpucompute.sample.search.CollectionStore;

/** The demo load, on with {@code sample.demo-load.enabled=true} (the {@code demo} profile sets it). */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty("sample.demo-load.enabled")
class DemoLoadConfiguration {

	@Bean
	DemoLoad demoLoad(CollectionStore store, SampleProperties properties, ObjectProvider<MeterRegistry> registry) {
		return new DemoLoad(store, properties, registry);
	}

}
