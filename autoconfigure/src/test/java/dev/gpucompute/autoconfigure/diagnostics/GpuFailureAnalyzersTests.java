package dev.gpucompute.autoconfigure.diagnostics;

import java.util.List;

import org.apache.commons.logging.LogFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.diagnostics.FailureAnalyzer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.core.io.support.SpringFactoriesLoader.ArgumentResolver;
import org.springframework.core.io.support.SpringFactoriesLoader.FailureHandler;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.kernels.KernelLoadException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Tests for the GPU failure analyzers: each start-up error users will hit gets a description and an
 * action, and the analyzers are registered ahead of Spring Boot's generic ones.
 */
@ExtendWith(OutputCaptureExtension.class)
class GpuFailureAnalyzersTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class));

	@Test
	void unknownBackendValue() {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertyValueFailureAnalyzer(), "gpu.backend=rocm");
		assertThat(analysis.getDescription()).contains("gpu.backend is set to 'rocm'")
			.contains("not one of its values: auto, cuda, cpu");
		assertThat(analysis.getAction()).contains("Set gpu.backend to 'auto'").contains("'cuda'").contains("'cpu'");
	}

	@Test
	void unknownValueOfAnotherGpuEnum() {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertyValueFailureAnalyzer(),
				"gpu.streams.default-stream=shared");
		assertThat(analysis.getDescription()).contains("gpu.streams.default-stream is set to 'shared'")
			.contains("per-thread, legacy");
		assertThat(analysis.getAction()).isEqualTo("Set gpu.streams.default-stream to one of: per-thread, legacy.");
	}

	@Test
	void invalidValueOutsideGpuIsLeftToSpringBoot() {
		this.runner.withPropertyValues("gpu.streams.pool-size=many").run((context) -> {
			// not an enum: Spring Boot's own analyzer explains the conversion failure
			assertThat(new InvalidGpuPropertyValueFailureAnalyzer().analyze(context.getStartupFailure())).isNull();
		});
	}

	@Test
	void cudaForcedWithoutDriver() {
		assumeThat(GpuContext.select(Backend.CUDA, 0).availability().available()).as("a CUDA device is present")
			.isFalse();
		FailureAnalysis analysis = analyze(new BackendUnavailableFailureAnalyzer(), "gpu.backend=cuda");
		assertThat(analysis.getDescription())
			.startsWith("The CUDA backend was required (gpu.backend=cuda) but cannot be used on this machine: ")
			.contains(GpuContext.select(Backend.CUDA, 0).availability().reason());
		assertThat(analysis.getAction()).contains("NVIDIA driver").contains("gpu.backend=auto").contains("gpu.backend=cpu");
	}

	@Test
	void poolSizesThatContradictEachOther() {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertiesFailureAnalyzer(), "gpu.streams.pool-size=40",
				"gpu.streams.max-size=16");
		assertThat(analysis.getDescription())
			.startsWith("gpu.streams.pool-size (40) is larger than gpu.streams.max-size (16)")
			.contains("gpu.streams.pool-size = 40");
		assertThat(analysis.getAction())
			.isEqualTo("Lower gpu.streams.pool-size to at most 16, or raise gpu.streams.max-size to at least 40.");
	}

	@ParameterizedTest
	@CsvSource(delimiter = '|', textBlock = """
			gpu.device=-1                          | gpu.device = -1                          | must be at least 0
			gpu.streams.pool-size=-2               | gpu.streams.pool-size = -2               | must be at least 0
			gpu.streams.max-size=0                 | gpu.streams.max-size = 0                 | must be at least 1
			gpu.streams.acquire-timeout=-1s        | gpu.streams.acquire-timeout = -1s        | must not be negative
			gpu.streams.leak-detection-threshold=-5ms | gpu.streams.leak-detection-threshold = -5ms | must not be negative
			gpu.shutdown.drain-timeout=-30s        | gpu.shutdown.drain-timeout = -30s        | must not be negative
			gpu.cpu.threads=0                      | gpu.cpu.threads = 0                      | must be at least 1
			gpu.kernels.locations[0]=              | gpu.kernels.locations =                  | must not contain an empty location
			""")
	void valuesOutOfRange(String property, String shown, String reason) {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertiesFailureAnalyzer(), property);
		assertThat(analysis.getDescription()).startsWith("The GPU configuration has invalid values.")
			.contains(shown)
			.contains(reason);
		assertThat(analysis.getAction()).contains("Correct the gpu.* properties listed above");
	}

	@Test
	void severalValuesOutOfRangeAreAllListed() {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertiesFailureAnalyzer(), "gpu.device=-1",
				"gpu.cpu.threads=0");
		assertThat(analysis.getDescription()).contains("gpu.device = -1").contains("gpu.cpu.threads = 0");
	}

	@Test
	void deviceOrdinalOutOfRange() {
		FailureAnalysis analysis = analyze(new DeviceOrdinalFailureAnalyzer(), "gpu.backend=cpu", "gpu.device=1");
		assertThat(analysis.getDescription())
			.isEqualTo("gpu.device is 1, but the CPU backend on this machine has 1 device (ordinal 0).");
		assertThat(analysis.getAction()).contains("set gpu.device=0");
		// the generic analyzer leaves this one to the specific one
		this.runner.withPropertyValues("gpu.backend=cpu", "gpu.device=1")
			.run((context) -> assertThat(new BackendUnavailableFailureAnalyzer().analyze(context.getStartupFailure()))
				.isNull());
	}

	@Test
	void kernelDefinitionError() {
		FailureAnalysis analysis = analyze(new KernelDefinitionFailureAnalyzer(),
				"gpu.kernels.locations=classpath:kernels/no-params/");
		assertThat(analysis.getDescription()).startsWith("Kernel 'scale' from ")
			.contains("kernels/no-params/scale.ptx")
			.contains("parameter types are unknown");
		assertThat(analysis.getAction()).contains("KernelSource bean").contains("'scale.params'");
	}

	@Test
	void kernelCompilationFailureShowsTheCompilerLog() {
		// What the CUDA backend throws when NVRTC rejects a kernel, as the auto-configuration wraps it.
		KernelCompilationException compilation = new KernelCompilationException("saxpy", "NVRTC_ERROR_COMPILATION",
				"saxpy.cu(3): error: identifier \"flaot\" is undefined\n1 error detected in the compilation of \"saxpy.cu\".",
				null);
		Exception failure = new IllegalStateException("Error creating bean with name 'gpuKernels'",
				new KernelLoadException("saxpy", "file [/app/gpu/kernels/saxpy.cu]", compilation));
		FailureAnalysis analysis = new KernelCompilationFailureAnalyzer().analyze(failure);
		assertThat(analysis.getDescription())
			.startsWith("Kernel 'saxpy' could not be compiled: NVRTC_ERROR_COMPILATION")
			.contains("loaded at start-up from file [/app/gpu/kernels/saxpy.cu]")
			.contains("Compiler log:\n    saxpy.cu(3): error: identifier \"flaot\" is undefined\n    1 error detected");
		assertThat(analysis.getDescription()).doesNotContain("--- compiler log ---");
		assertThat(analysis.getAction()).contains("compiler log").contains("PTX").contains("gpu.backend=cpu");
	}

	@Test
	void kernelCompilationFailureAtStartUp() {
		this.runner
			.withBean("broken", dev.gpucompute.KernelSource.class,
					() -> dev.gpucompute.KernelSource.named("broken").cudaResource("gpu/kernels/missing.cu"))
			.run((context) -> {
				FailureAnalysis analysis = new KernelCompilationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis.getDescription()).contains("Kernel 'broken' could not be compiled")
					.contains("gpu/kernels/missing.cu");
				assertThat(analysis.getAction()).isNotBlank();
			});
	}

	@Test
	void analyzersAreRegisteredAheadOfSpringBootsOwn() {
		// Loaded as Spring Boot loads them for its report: with a bean factory and an environment, skipping
		// analyzers that cannot be created on this class path.
		ArgumentResolver arguments = ArgumentResolver.of(BeanFactory.class, new DefaultListableBeanFactory())
			.and(Environment.class, new StandardEnvironment());
		List<FailureAnalyzer> analyzers = SpringFactoriesLoader.forDefaultResourceLocation(getClass().getClassLoader())
			.load(FailureAnalyzer.class, arguments, FailureHandler.logging(LogFactory.getLog(getClass())));
		List<String> names = analyzers.stream().map((analyzer) -> analyzer.getClass().getSimpleName()).toList();
		assertThat(names).contains("InvalidGpuPropertyValueFailureAnalyzer", "InvalidGpuPropertiesFailureAnalyzer",
				"BackendUnavailableFailureAnalyzer", "DeviceOrdinalFailureAnalyzer", "KernelCompilationFailureAnalyzer",
				"KernelDefinitionFailureAnalyzer");
		assertThat(names.indexOf("InvalidGpuPropertyValueFailureAnalyzer")).isLessThan(names.indexOf("BindFailureAnalyzer"));
		assertThat(names.indexOf("InvalidGpuPropertiesFailureAnalyzer"))
			.isLessThan(names.indexOf("BindValidationFailureAnalyzer"));
	}

	@Test
	void startUpReportShowsTheGpuAnalysis(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run("--gpu.backend=rocm"));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("gpu.backend is set to 'rocm'")
			.contains("Set gpu.backend to 'auto'");
	}

	@Test
	void startUpReportShowsThePoolContradiction(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run("--gpu.streams.pool-size=64"));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("gpu.streams.pool-size (64) is larger than gpu.streams.max-size (32)")
			.contains("Lower gpu.streams.pool-size to at most 32");
	}

	private static void run(String... args) {
		SpringApplication application = new SpringApplication(EmptyApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.run(args).close();
	}

	private FailureAnalysis analyze(FailureAnalyzer analyzer, String... properties) {
		FailureAnalysis[] result = new FailureAnalysis[1];
		this.runner.withPropertyValues(properties).run((context) -> {
			assertThat(context).hasFailed();
			result[0] = analyzer.analyze(context.getStartupFailure());
		});
		assertThat(result[0]).as("analysis of %s", List.of(properties)).isNotNull();
		return result[0];
	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class EmptyApplication {

	}

}
