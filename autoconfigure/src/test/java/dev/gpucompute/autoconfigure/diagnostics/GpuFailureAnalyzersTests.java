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
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.io.support.SpringFactoriesLoader;
import org.springframework.core.io.support.SpringFactoriesLoader.ArgumentResolver;
import org.springframework.core.io.support.SpringFactoriesLoader.FailureHandler;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;
import dev.gpucompute.autoconfigure.GpuAutoConfiguration;
import dev.gpucompute.autoconfigure.QuietOutputExtension;
import dev.gpucompute.kernels.KernelDefinitionException;
import dev.gpucompute.kernels.KernelLoadException;
import dev.gpucompute.spi.Backends;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * Tests for the GPU failure analyzers: each start-up error users will hit gets a description and an
 * action, and the analyzers are registered ahead of Spring Boot's generic ones.
 */
@ExtendWith(QuietOutputExtension.class)
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
		assumeThat(Backends.select(Backend.CUDA, 0).availability().available()).as("a CUDA device is present")
			.isFalse();
		FailureAnalysis analysis = analyze(new BackendUnavailableFailureAnalyzer(), "gpu.backend=cuda");
		assertThat(analysis.getDescription())
			.startsWith("The CUDA backend was required (gpu.backend=cuda) but cannot be used on this machine: ")
			.contains(Backends.select(Backend.CUDA, 0).availability().reason());
		assertThat(analysis.getAction()).contains("NVIDIA driver").contains("gpu.backend=auto").contains("gpu.backend=cpu");
	}

	@Test
	void cudaForcedWithoutJCudasNativesSaysWhichToAdd() {
		// The CUDA provider says what is missing (BackendProvider.missingDependency). JCuda publishes no natives
		// for linux-aarch64, so there the x86-64 natives of this class path do not count.
		String osName = System.getProperty("os.name");
		String osArch = System.getProperty("os.arch");
		System.setProperty("os.name", "Linux");
		System.setProperty("os.arch", "aarch64");
		try {
			FailureAnalysis analysis = new BackendUnavailableFailureAnalyzer()
				.analyze(new dev.gpucompute.BackendUnavailableException(Backend.CUDA, "no CUDA device", null));
			assertThat(analysis.getDescription())
				.contains("JCuda's native libraries for linux-aarch64 are not on the class path")
				.contains("org.jcuda:jcuda-natives:12.6.0:linux-aarch64");
			assertThat(analysis.getAction()).startsWith("Add JCuda's natives for this platform");
		}
		finally {
			System.setProperty("os.name", osName);
			System.setProperty("os.arch", osArch);
		}
	}

	@Test
	void batcherSettingsSayWhatABatcherNeeds() {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertiesFailureAnalyzer(),
				"gpu.streams.priority-limits.high=2", "gpu.batching.interactive.priority=high",
				"gpu.batching.interactive.max-concurrent-batches=3");
		assertThat(analysis.getDescription()).contains("gpu.batching.interactive.max-concurrent-batches = 3")
			.contains("must be at most 2");
		assertThat(analysis.getAction()).contains("gpu.batching.<name>.* configures the batcher that GpuBatchers.create")
			.contains("gpu.streams.priority-limits");
	}

	@Test
	void unknownBatcherPriority() {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertyValueFailureAnalyzer(),
				"gpu.batching.search.priority=urgent");
		assertThat(analysis.getDescription()).contains("gpu.batching.search.priority is set to 'urgent'")
			.contains("normal, high");
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
			gpu.copies.staging-budget=1KB          | gpu.copies.staging-budget = 1KB          | must be at least 4KB
			gpu.copies.staging-timeout=-1s         | gpu.copies.staging-timeout = -1s         | must not be negative
			gpu.kernels.locations[0]=              | gpu.kernels.locations =                  | must not contain an empty location
			gpu.streams.priority-limits.normal=0   | gpu.streams.priority-limits.normal = 0   | must be at least 1
			gpu.streams.priority-limits.high=33    | gpu.streams.priority-limits.high = 33    | must be at most 32
			gpu.batching.search.max-batch-size=0   | gpu.batching.search.max-batch-size = 0   | must be at least 1
			gpu.batching.search.max-batch-size=70000 | gpu.batching.search.max-batch-size = 70000 | must be at most 65536
			gpu.batching.search.max-queued=0       | gpu.batching.search.max-queued = 0       | must be at least 1
			gpu.batching.search.max-queue-delay=-1ms | gpu.batching.search.max-queue-delay = -1ms | must not be negative
			gpu.batching.search.timeout=-2s        | gpu.batching.search.timeout = -2s        | must not be negative
			gpu.batching.search.max-concurrent-batches=40 | gpu.batching.search.max-concurrent-batches = 40 | must be at most 32
			gpu.batching.search.max-concurrent-batches=0 | gpu.batching.search.max-concurrent-batches = 0 | must be at least 1
			gpu.batching[my batcher].max-batch-size=4 | gpu.batching = | a name is 1 to 64 letters
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
	void valueSetInAPropertiesFileIsShownWithItsFileAndLine(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(config("bad-backend.properties")));
		assertThat(output).contains("gpu.backend is set to 'rocm' (class path resource "
				+ "[failure-analysis/bad-backend.properties] - 2:13), which is not one of its values: auto, cuda, cpu.");
	}

	@Test
	void valueSetInYamlIsShownWithItsFileAndLine(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(config("bad-timeout.yml")));
		assertThat(output).contains("gpu.streams.acquire-timeout = -1s (class path resource "
				+ "[failure-analysis/bad-timeout.yml] - 3:22): must not be negative");
	}

	@Test
	void poolContradictionSetInAFileShowsWhereBothSizesWereSet(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(config("bad-sizes.properties")));
		assertThat(output).contains("gpu.streams.pool-size (64) is larger than gpu.streams.max-size (16)")
			.contains("gpu.streams.pool-size = 64 (class path resource [failure-analysis/bad-sizes.properties] - 2:23)")
			.contains("gpu.streams.max-size = 16 (class path resource [failure-analysis/bad-sizes.properties] - 3:22)")
			.contains("gpu.cpu.threads = 0 (class path resource [failure-analysis/bad-sizes.properties] - 4:17): "
					+ "must be at least 1");
	}

	@Test
	void valueFromASystemPropertyIsShownAsSuch() {
		FailureAnalysis analysis = analyze(new InvalidGpuPropertyValueFailureAnalyzer(),
				(runner) -> runner.withSystemProperties("gpu.backend=rocm"));
		assertThat(analysis.getDescription()).contains("gpu.backend is set to 'rocm' (")
			.contains("from property source \"systemProperties\"");
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

	@ParameterizedTest
	@CsvSource(delimiter = '|', textBlock = """
			classpath:kernels/bad-name/   | INVALID_NAME               | Rename the file to a C identifier (letters, digits and underscores, not starting with a digit), for example 'my_kernel.cu',
			classpath:kernels/no-params/  | UNKNOWN_PARAMETER_TYPES    | add a file 'scale.params' beside it listing them in order
			classpath:kernels/bad-params/ | INVALID_PARAMS_FILE        | List only int, long, float, double and buffer in 'scale.params'
			classpath:kernels/bad-type/   | UNSUPPORTED_PARAMETER_TYPE | Change the parameter to a type the launcher can pass
			classpath:kernels/no-entry/   | MISSING_ENTRY_POINT        | Rename the file to 'something_else.cu', or rename the function.
			classpath:kernels/empty/*     | NOT_A_KERNEL_FILE          | Make gpu.kernels.locations match kernel files only
			""")
	void eachKernelFileProblemHasItsOwnAction(String location, KernelDefinitionException.Kind kind, String action) {
		FailureAnalysis analysis = analyzeKernelDefinition(kind, (runner) -> runner
			.withPropertyValues("gpu.backend=cpu", "gpu.kernels.locations=" + location));
		assertThat(analysis.getAction()).contains(action);
	}

	@Test
	void everyKindOfKernelDefinitionProblemHasADifferentAction() {
		ApplicationContextRunner cpu = this.runner.withPropertyValues("gpu.backend=cpu");
		java.util.Map<KernelDefinitionException.Kind, String> actions = new java.util.EnumMap<>(
				KernelDefinitionException.Kind.class);
		java.util.Map<String, KernelDefinitionException.Kind> kinds = java.util.Map.of("kernels/bad-name/",
				KernelDefinitionException.Kind.INVALID_NAME, "kernels/no-params/",
				KernelDefinitionException.Kind.UNKNOWN_PARAMETER_TYPES, "kernels/bad-params/",
				KernelDefinitionException.Kind.INVALID_PARAMS_FILE, "kernels/bad-type/",
				KernelDefinitionException.Kind.UNSUPPORTED_PARAMETER_TYPE, "kernels/no-entry/",
				KernelDefinitionException.Kind.MISSING_ENTRY_POINT, "kernels/empty/*",
				KernelDefinitionException.Kind.NOT_A_KERNEL_FILE);
		kinds.forEach((location, kind) -> actions.put(kind, analyzeKernelDefinition(kind,
				(runner) -> cpu.withPropertyValues("gpu.kernels.locations=classpath:" + location))
			.getAction()));
		actions.put(KernelDefinitionException.Kind.PARAMS_CONTRADICT_SOURCE,
				analyzeKernelDefinition(KernelDefinitionException.Kind.PARAMS_CONTRADICT_SOURCE,
						(runner) -> cpu.withPropertyValues("gpu.kernels.locations=classpath:kernels/sidecar/")
							.withBean("scale", KernelSource.class,
									() -> KernelSource.named("scale").params(ParamType.INT, ParamType.INT)))
					.getAction());
		actions.put(KernelDefinitionException.Kind.CUDA_CODE_CONTRADICTS_SOURCE,
				analyzeKernelDefinition(KernelDefinitionException.Kind.CUDA_CODE_CONTRADICTS_SOURCE,
						(runner) -> cpu.withPropertyValues("gpu.kernels.locations=classpath:kernels/types/mixed.cu")
							.withBean("mixed", KernelSource.class,
									() -> KernelSource.named("mixed").cuda("extern \"C\" __global__ void mixed() {}")))
					.getAction());
		actions.put(KernelDefinitionException.Kind.DUPLICATE_FILES,
				analyzeKernelDefinition(KernelDefinitionException.Kind.DUPLICATE_FILES,
						(runner) -> cpu.withPropertyValues(
								"gpu.kernels.locations=classpath:kernels/sidecar/,classpath:failure-analysis/gpu/kernels/"))
					.getAction());
		actions.put(KernelDefinitionException.Kind.DUPLICATE_SOURCES,
				analyzeKernelDefinition(KernelDefinitionException.Kind.DUPLICATE_SOURCES,
						(runner) -> cpu.withBean("one", KernelSource.class, () -> KernelSource.named("twice"))
							.withBean("two", KernelSource.class, () -> KernelSource.named("twice")))
					.getAction());
		assertThat(actions).containsOnlyKeys(KernelDefinitionException.Kind.values());
		assertThat(new java.util.HashSet<>(actions.values())).hasSize(KernelDefinitionException.Kind.values().length);
	}

	@Test
	void misspelledKernelLocationSetInAFileFailsStartUpWithASuggestion(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(config("misspelled-location.properties")));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("gpu.kernels.locations contains 'classpath:failure-analysis/gpu/kernal/' (class path resource "
					+ "[failure-analysis/misspelled-location.properties] - 2:23), which does not exist")
			.contains("Kernel files were found in:\n    classpath:failure-analysis/gpu/kernels/")
			.contains("did you mean 'classpath:failure-analysis/gpu/kernels/'?");
	}

	@Test
	void injectedLauncherWithTheGpuDisabledSaysSoAndWhere(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(NeedsALauncher.class, config("gpu-disabled.properties")));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("Parameter 0 of constructor in " + PricingService.class.getName() + " required a bean of type "
					+ "'dev.gpucompute.GpuLauncher' that could not be found: gpu.enabled is false (class path resource "
					+ "[failure-analysis/gpu-disabled.properties] - 3:13)")
			.contains("Remove gpu.enabled=false")
			.contains("ObjectProvider<GpuLauncher>");
	}

	@Test
	void missingGpuBeanForAnotherReasonIsLeftToSpringBoot() {
		// Two contexts and no primary one: the launcher backs off, and gpu.enabled has nothing to do with it.
		this.runner.withPropertyValues("gpu.backend=cpu")
			.withUserConfiguration(TwoContexts.class, NeedsALauncher.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(new GpuDisabledFailureAnalyzer(new StandardEnvironment())
					.analyze(context.getStartupFailure())).isNull();
			});
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
	void kernelBeanWithABadExpressionFailsStartUpSayingWhere(CapturedOutput output) {
		assertThatException().isThrownBy(() -> run(BadExpressionKernel.class, "--gpu.backend=cpu"));
		assertThat(output).contains("APPLICATION FAILED TO START")
			.contains("Kernel 'clamp' is defined by expressions, and its body has a mistake at line 1, column 5: "
					+ "unknown function 'clip'; the functions are: abs, acos,")
			.contains("  y = clip(x, lo, hi)\n      ^")
			.contains("never build one from request data");
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
				"KernelDefinitionFailureAnalyzer", "KernelExpressionFailureAnalyzer", "KernelLocationFailureAnalyzer",
				"GpuDisabledFailureAnalyzer");
		assertThat(names.indexOf("GpuDisabledFailureAnalyzer"))
			.isLessThan(names.indexOf("NoSuchBeanDefinitionFailureAnalyzer"));
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
		run(EmptyApplication.class, args);
	}

	private static void run(Class<?> application, String... args) {
		SpringApplication springApplication = new SpringApplication(application);
		springApplication.setWebApplicationType(WebApplicationType.NONE);
		springApplication.run(args).close();
	}

	/** Reads the application's configuration from one test file, as if it were its application.properties. */
	private static String config(String file) {
		return "--spring.config.location=classpath:failure-analysis/" + file;
	}

	private FailureAnalysis analyze(FailureAnalyzer analyzer, String... properties) {
		return analyze(analyzer, (runner) -> runner.withPropertyValues(properties));
	}

	private FailureAnalysis analyze(FailureAnalyzer analyzer,
			java.util.function.UnaryOperator<ApplicationContextRunner> customizer) {
		FailureAnalysis[] result = new FailureAnalysis[1];
		customizer.apply(this.runner).run((context) -> {
			assertThat(context).hasFailed();
			result[0] = analyzer.analyze(context.getStartupFailure());
		});
		assertThat(result[0]).as("analysis").isNotNull();
		return result[0];
	}

	private FailureAnalysis analyzeKernelDefinition(KernelDefinitionException.Kind kind,
			java.util.function.UnaryOperator<ApplicationContextRunner> customizer) {
		FailureAnalysis[] result = new FailureAnalysis[1];
		customizer.apply(this.runner).run((context) -> {
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOfSatisfying(KernelDefinitionException.class, (ex) -> assertThat(ex.kind()).isEqualTo(kind));
			result[0] = new KernelDefinitionFailureAnalyzer().analyze(context.getStartupFailure());
		});
		assertThat(result[0]).as("analysis of %s", kind).isNotNull();
		return result[0];
	}

	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class EmptyApplication {

	}

	/** An application whose kernel bean is an expression kernel with a misspelt function. */
	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	static class BadExpressionKernel {

		@Bean
		KernelSource clamp() {
			return dev.gpucompute.expression.ElementwiseKernel.named("clamp")
				.in("float lo, float hi, float[] x")
				.out("float[] y")
				.body("y = clip(x, lo, hi)")
				.build();
		}

	}

	/** An application with a component that needs the launcher. */
	@Configuration(proxyBeanMethods = false)
	@EnableAutoConfiguration
	@Import(PricingService.class)
	static class NeedsALauncher {

	}

	static class PricingService {

		PricingService(GpuLauncher launcher) {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoContexts {

		@Bean(destroyMethod = "close")
		GpuContext first() {
			return GpuContext.builder().backend(Backend.CPU).poolSize(0).cpuThreads(1).open();
		}

		@Bean(destroyMethod = "close")
		GpuContext second() {
			return GpuContext.builder().backend(Backend.CPU).poolSize(0).cpuThreads(1).open();
		}

	}

}
