package dev.gpucompute.autoconfigure.web;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;

import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * When the GPU problem details are configured, and when they back off.
 */
class GpuWebAutoConfigurationTests {

	private static final AutoConfigurations CONFIGURATIONS = AutoConfigurations.of(GpuAutoConfiguration.class,
			GpuWebAutoConfiguration.class);

	private final WebApplicationContextRunner servlet = new WebApplicationContextRunner()
		.withConfiguration(CONFIGURATIONS)
		.withPropertyValues("gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=0");

	@Test
	void servletAndReactiveApplicationsGetTheHandler() {
		this.servlet.run((context) -> assertThat(context).hasSingleBean(GpuExceptionHandler.class));
		new ReactiveWebApplicationContextRunner().withConfiguration(CONFIGURATIONS)
			.withPropertyValues("gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=0")
			.run((context) -> assertThat(context).hasSingleBean(GpuExceptionHandler.class));
	}

	@Test
	void aNonWebApplicationGetsNone() {
		new ApplicationContextRunner().withConfiguration(CONFIGURATIONS)
			.withPropertyValues("gpu.backend=cpu", "gpu.cpu.threads=1", "gpu.streams.pool-size=0")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuExceptionHandler.class));
	}

	@Test
	void backsOffWhenSwitchedOff() {
		this.servlet.withPropertyValues("gpu.problem-details.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(GpuExceptionHandler.class)
				.doesNotHaveBean(GpuProblemDetails.class));
	}

	@Test
	void backsOffWithTheGpuDisabled() {
		this.servlet.withPropertyValues("gpu.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(GpuExceptionHandler.class));
	}

	@Test
	void backsOffForTheApplicationsOwnBeans() {
		GpuProblemDetails own = new GpuProblemDetails(Duration.ofSeconds(7));
		this.servlet.withBean(GpuProblemDetails.class, () -> own)
			.run((context) -> assertThat(context.getBean(GpuProblemDetails.class)).isSameAs(own));
		GpuExceptionHandler handler = new GpuExceptionHandler(own);
		this.servlet.withBean(GpuExceptionHandler.class, () -> handler)
			.run((context) -> assertThat(context.getBean(GpuExceptionHandler.class)).isSameAs(handler));
	}

	@Test
	void aNegativeRetryAfterIsABadValue() {
		this.servlet.withPropertyValues("gpu.problem-details.retry-after=-1s")
			.run((context) -> assertThat(context).hasFailed());
	}

}
