package dev.gpucompute.sample.web;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.converter.HttpMessageConverters;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

import dev.gpucompute.autoconfigure.web.GpuProblemCustomizer;

/**
 * Adds the binary search answer ({@link HitsMessageConverter}) to Spring MVC's converters, and this
 * service's additions to the starter's GPU problem details ({@link SampleGpuProblems}).
 */
@Configuration(proxyBeanMethods = false)
class WebConfiguration implements WebMvcConfigurer {

	@Override
	public void configureMessageConverters(HttpMessageConverters.ServerBuilder builder) {
		builder.addCustomConverter(new HitsMessageConverter());
	}

	@Bean
	GpuProblemCustomizer sampleGpuProblems() {
		return new SampleGpuProblems();
	}

}
