package dev.gpucompute.test;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.SpringBootTest.WebEnvironment;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.core.env.Environment;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link GpuCpuBackend}: it wins over the application's own {@code gpu.backend} (here
 * {@code cuda} from the command line, which would fail on a machine without CUDA and run on CUDA
 * on one with it).
 */
@SpringBootTest(classes = GpuCpuBackendTests.Application.class, webEnvironment = WebEnvironment.NONE,
		args = "--gpu.backend=cuda")
@GpuCpuBackend
class GpuCpuBackendTests {

	@Autowired
	private GpuContext gpu;

	@Autowired
	private Environment environment;

	@Test
	void forcesTheCpuBackend() {
		assertThat(this.environment.getProperty("gpu.backend")).isEqualTo("cpu");
		assertThat(this.gpu.backend()).isEqualTo(Backend.CPU);
		assertThat(this.gpu.backendReason()).isEqualTo("CPU backend requested");
	}

	@Test
	void propertyConstantForContextRunners() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
			.withPropertyValues(GpuCpuBackend.PROPERTY)
			.run((context) -> assertThat(context.getBean(GpuContext.class).backend()).isEqualTo(Backend.CPU));
	}

	@SpringBootConfiguration(proxyBeanMethods = false)
	@ImportAutoConfiguration(GpuAutoConfiguration.class)
	static class Application {

	}

}
