package dev.gpucompute.sample.web;

import org.springframework.context.annotation.Configuration;
import org.springframework.http.converter.HttpMessageConverters;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/** Adds the binary search answer ({@link HitsMessageConverter}) to Spring MVC's converters. */
@Configuration(proxyBeanMethods = false)
class WebConfiguration implements WebMvcConfigurer {

	@Override
	public void configureMessageConverters(HttpMessageConverters.ServerBuilder builder) {
		builder.addCustomConverter(new HitsMessageConverter());
	}

}
