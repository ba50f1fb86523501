package dev.gpucompute.autoconfigure.web;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ProblemDetail;

import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.GpuProperties;

/**
 * {@link EnableAutoConfiguration Auto-configuration} of problem details for GPU failures in web
 * applications, Spring MVC or WebFlux: a {@link GpuExceptionHandler} answering with a
 * {@link GpuProblemDetails} that applies the application's {@link GpuProblemCustomizer} beans, in
 * order. Backs off when the application defines its own {@link GpuExceptionHandler} or
 * {@link GpuProblemDetails} bean (customizers then apply only if that bean applies them), and with
 * {@code gpu.problem-details.enabled=false}; handlers of the application's own win over it anyway.
 */
@AutoConfiguration(after = GpuAutoConfiguration.class)
@ConditionalOnClass({ GpuContext.class, ProblemDetail.class })
@ConditionalOnWebApplication
@ConditionalOnBean(GpuProperties.class)
@ConditionalOnBooleanProperty(name = "gpu.problem-details.enabled", matchIfMissing = true)
public final class GpuWebAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	GpuProblemDetails gpuProblemDetails(GpuProperties properties, ObjectProvider<GpuProblemCustomizer> customizers) {
		return new GpuProblemDetails(properties.getProblemDetails().getRetryAfter(),
				customizers.orderedStream().toList());
	}

	@Bean
	@ConditionalOnMissingBean
	GpuExceptionHandler gpuExceptionHandler(GpuProblemDetails problemDetails) {
		return new GpuExceptionHandler(problemDetails);
	}

}
