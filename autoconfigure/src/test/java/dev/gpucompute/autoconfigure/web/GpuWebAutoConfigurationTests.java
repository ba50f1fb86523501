package dev.gpucompute.autoconfigure.web;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpHeaders;

import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.web.GpuProblemDetails.GpuProblem;

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
	void theApplicationsCustomizersAdjustEveryAnswerInOrder() {
		this.servlet.withUserConfiguration(Customizers.class).run((context) -> {
			GpuProblemDetails details = context.getBean(GpuProblemDetails.class);
			GpuProblem busy = details.problemFor(new PoolExhaustedException(Duration.ofMillis(5), 1, 1, 0));
			assertThat(busy.body().getType().toString()).isEqualTo("urn:gpu-compute:problem:pool-exhausted");
			assertThat(busy.body().getTitle()).isEqualTo("first, then second");
			assertThat(busy.body().getProperties()).containsEntry("failure", "PoolExhaustedException");
			assertThat(busy.headers().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
			GpuProblem kernel = details.problemFor(new KernelLaunchException("saxpy", "s0", "illegal address", null));
			assertThat(kernel.body().getTitle()).isEqualTo("first, then second");
			assertThat(kernel.body().getProperties()).containsEntry("kernel", "saxpy")
				.containsEntry("failure", "KernelLaunchException");
			// A fresh answer each time: one request's customized answer is not the next one's.
			assertThat(details.problemFor(new PoolExhaustedException(Duration.ofMillis(5), 1, 1, 0)))
				.isNotSameAs(busy);
			assertThat(details.problemFor(new IllegalStateException("not the GPU's"))).isNull();
		});
	}

	@Test
	void withoutCustomizersTheAnswersAreTheStarters() {
		this.servlet.run((context) -> {
			GpuProblem busy = context.getBean(GpuProblemDetails.class)
				.problemFor(new PoolExhaustedException(Duration.ofMillis(5), 1, 1, 0));
			assertThat(busy.body().getTitle()).isEqualTo("GPU busy");
			assertThat(busy.body().getProperties()).isNull();
		});
	}

	@Test
	void aNegativeRetryAfterIsABadValue() {
		this.servlet.withPropertyValues("gpu.problem-details.retry-after=-1s")
			.run((context) -> assertThat(context).hasFailed());
	}

	/** Declared second first: the order is {@code @Order}'s, not the declarations'. */
	@Configuration(proxyBeanMethods = false)
	static class Customizers {

		@Bean
		@Order(2)
		GpuProblemCustomizer second() {
			return (problem) -> problem.body().setTitle(problem.body().getTitle() + ", then second");
		}

		@Bean
		@Order(1)
		GpuProblemCustomizer first() {
			return (problem) -> {
				problem.body().setTitle("first");
				problem.body().setProperty("failure", problem.failure().getClass().getSimpleName());
			};
		}

	}

}
