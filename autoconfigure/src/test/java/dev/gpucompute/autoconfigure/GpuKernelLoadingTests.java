package dev.gpucompute.autoconfigure;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;

import dev.gpucompute.Backend;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.KernelSource.CudaForm;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.UnsupportedBackendOperationException;
import dev.gpucompute.autoconfigure.kernels.GpuKernels;
import dev.gpucompute.autoconfigure.kernels.GpuKernels.KernelLocation;
import dev.gpucompute.autoconfigure.kernels.KernelLocationNotFoundException;
import dev.gpucompute.kernels.KernelDefinitionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * Tests for the kernels loaded at start-up: kernel files under {@code gpu.kernels.locations},
 * {@link KernelSource} beans, and how the two pair up.
 */
@ExtendWith(OutputCaptureExtension.class)
class GpuKernelLoadingTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(GpuAutoConfiguration.class))
		.withPropertyValues("gpu.backend=cpu", "gpu.streams.pool-size=1");

	@Test
	void kernelFileInTheDefaultLocationIsLoadedWithParamsFromItsSignature() {
		this.runner.withClassLoader(TestKernels.withDefaultLocationKernels()).run((context) -> {
			GpuKernels kernels = context.getBean(GpuKernels.class);
			assertThat(kernels.kernels()).containsOnlyKeys("saxpy");
			assertThat(kernels.origin("saxpy")).contains("gpu/kernels/saxpy.cu");
			Kernel saxpy = context.getBean(GpuLauncher.class).kernel("saxpy");
			assertThat(saxpy.params()).containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER,
					ParamType.BUFFER);
			assertThat(saxpy.source().cudaForm()).isEqualTo(CudaForm.SOURCE);
			assertThat(saxpy.source().cudaText()).contains("__global__ void saxpy(");
			assertThat(saxpy.source().cpu()).isNull();
		});
	}

	@Test
	void cudaOnlyKernelLoadsOnTheCpuBackendAndFailsWhenLaunched() {
		this.runner.withClassLoader(TestKernels.withDefaultLocationKernels()).run((context) -> {
			GpuLauncher launcher = context.getBean(GpuLauncher.class);
			try (StreamLease lease = context.getBean(StreamPool.class).acquire();
					DeviceBuffer x = launcher.allocate(16, ElementType.BYTE);
					DeviceBuffer y = launcher.allocate(16, ElementType.BYTE)) {
				assertThatExceptionOfType(UnsupportedBackendOperationException.class)
					.isThrownBy(() -> launcher.launch(lease.stream(), launcher.kernel("saxpy"), LaunchConfig.linear(4, 4),
							4, 1f, x, y))
					.withMessageContaining("saxpy")
					.withMessageContaining("no CPU implementation");
			}
		});
	}

	@Test
	void beanNamedLikeTheFileSuppliesParamsAndCpuImplementation() {
		this.runner.withClassLoader(TestKernels.withDefaultLocationKernels())
			.withBean("saxpyKernel", KernelSource.class, TestKernels::saxpyCpu)
			.run((context) -> {
				GpuKernels kernels = context.getBean(GpuKernels.class);
				assertThat(kernels.origin("saxpy")).contains("gpu/kernels/saxpy.cu").contains("bean 'saxpyKernel'");
				Kernel saxpy = context.getBean(GpuLauncher.class).kernel("saxpy");
				assertThat(saxpy.source().cudaForm()).isEqualTo(CudaForm.SOURCE);
				assertThat(saxpy.source().cpu()).isNotNull();
				GpuLauncher launcher = context.getBean(GpuLauncher.class);
				float[] y = { 1, 2, 3, 4, 5 };
				try (StreamLease lease = context.getBean(StreamPool.class).acquire();
						var scope = launcher.useStream(lease.stream());
						DeviceBuffer xs = launcher.upload(HostArray.of(new float[] { 10, 20, 30, 40, 50 }));
						DeviceBuffer ys = launcher.upload(HostArray.of(y))) {
					launcher.launch(saxpy, LaunchConfig.linear(5, 2), 5, 2f, xs, ys);
					ys.download(HostArray.of(y), lease.stream()).join();
				}
				assertThat(y).containsExactly(21, 42, 63, 84, 105);
			});
	}

	@Test
	void beanWithTheSameCudaCodeAsTheFileIsAccepted() {
		this.runner.withClassLoader(TestKernels.withDefaultLocationKernels())
			.withBean("saxpyKernel", KernelSource.class,
					() -> TestKernels.saxpyCpu().cudaResource("kernels/default-root/gpu/kernels/saxpy.cu"))
			.run((context) -> assertThat(context.getBean(GpuLauncher.class).kernel("saxpy").source().cpu()).isNotNull());
	}

	@Test
	void beanWithDifferentCudaCodeThanTheFileFailsStartUp() {
		this.runner.withClassLoader(TestKernels.withDefaultLocationKernels())
			.withBean("saxpyKernel", KernelSource.class,
					() -> TestKernels.saxpyCpu().cudaResource("kernels/duplicate/saxpy.cu"))
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("saxpy")
				.hasMessageContaining("CUDA code both in the bean and in the file"));
	}

	@Test
	void beanWithoutAFileIsLoaded() {
		this.runner
			.withBean("doubler", KernelSource.class,
					() -> KernelSource.named("double_it").params(ParamType.INT, ParamType.BUFFER).cpu((block, args) -> {
					}))
			.run((context) -> {
				assertThat(context.getBean(GpuKernels.class).origin("double_it")).isEqualTo("bean 'doubler'");
				assertThat(context.getBean(GpuLauncher.class).kernel("double_it").source().cudaForm()).isNull();
			});
	}

	@Test
	void twoBeansWithTheSameKernelNameFailStartUp() {
		this.runner.withBean("one", KernelSource.class, TestKernels::saxpyCpu)
			.withBean("two", KernelSource.class, TestKernels::saxpyCpu)
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("beans 'one' and 'two'"));
	}

	@Test
	void ptxFileTakesItsParamsFromTheParamsFile() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/sidecar/").run((context) -> {
			Kernel scale = context.getBean(GpuLauncher.class).kernel("scale");
			assertThat(scale.params()).containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER);
			assertThat(scale.source().cudaForm()).isEqualTo(CudaForm.PTX);
			assertThat(scale.source().cudaText()).contains(".visible .entry scale(");
		});
	}

	@Test
	void ptxFileWithoutParamsFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/no-params/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOfSatisfying(KernelDefinitionException.class, (ex) -> {
					assertThat(ex.kernelName()).isEqualTo("scale");
					assertThat(ex.origin()).contains("kernels/no-params/scale.ptx");
					assertThat(ex.problem()).contains("parameter types are unknown").contains("scale.params");
				}));
	}

	@Test
	void paramsFileWithAnUnknownTypeFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/bad-params/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOfSatisfying(KernelDefinitionException.class, (ex) -> {
					assertThat(ex.origin()).contains("scale.params");
					assertThat(ex.problem()).contains("'pointer' is not a parameter type");
				}));
	}

	@Test
	void paramsFileThatContradictsTheBeanFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/sidecar/")
			.withBean("scaleKernel", KernelSource.class,
					() -> KernelSource.named("scale").params(ParamType.INT, ParamType.DOUBLE, ParamType.BUFFER))
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("[INT, FLOAT, BUFFER]")
				.hasMessageContaining("[INT, DOUBLE, BUFFER]"));
	}

	@Test
	void unsupportedParameterTypeFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/bad-type/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("half_scale")
				.hasMessageContaining("'__half'"));
	}

	@Test
	void sourceWithoutAKernelNamedLikeTheFileFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/no-entry/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("'__global__ void mystery(...)'"));
	}

	@Test
	void fileNameThatIsNoKernelNameFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/bad-name/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("my-kernel")
				.hasMessageContaining("not a kernel name"));
	}

	@Test
	void twoFilesForOneKernelFailStartUp() {
		this.runner.withClassLoader(TestKernels.withDefaultLocationKernels())
			.withPropertyValues("gpu.kernels.locations=classpath:gpu/kernels/,classpath:kernels/duplicate/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("defined by two kernel files"));
	}

	@Test
	void prebuiltCodeBesideACudaSourceIsItsAheadOfTimeBuildFatbinFirst() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/prebuilt/").run((context) -> {
			assertThat(context.getBean(GpuKernels.class).kernels()).containsOnlyKeys("scale");
			assertThat(context.getBean(GpuKernels.class).origin("scale")).contains("scale.cu")
				.endsWith("with prebuilt scale.fatbin");
			KernelSource source = context.getBean(GpuLauncher.class).kernel("scale").source();
			assertThat(source.cudaForm()).isEqualTo(CudaForm.SOURCE);
			assertThat(source.params()).containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER);
			assertThat(source.prebuiltForm()).isEqualTo(CudaForm.FATBIN);
			assertThat(new String(source.prebuiltCode())).isEqualTo("fatbin stand-in");
		});
	}

	@Test
	void prebuiltCodeInAnotherDirectoryIsASecondKernelFile() {
		this.runner
			.withPropertyValues("gpu.kernels.locations=classpath:kernels/prebuilt/scale.cu,classpath:kernels/prebuilt-elsewhere/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelDefinitionException.class)
				.hasMessageContaining("defined by two kernel files"));
	}

	@Test
	void singleFileLocationAndSeveralLocations() {
		this.runner
			.withPropertyValues("gpu.kernels.locations=classpath:kernels/types/mixed.cu,classpath:kernels/sidecar/")
			.run((context) -> {
				assertThat(context.getBean(GpuKernels.class).kernels()).containsOnlyKeys("mixed", "scale");
				assertThat(context.getBean(GpuLauncher.class).kernel("mixed").params()).containsExactly(ParamType.INT,
						ParamType.LONG, ParamType.LONG, ParamType.DOUBLE, ParamType.FLOAT, ParamType.BUFFER,
						ParamType.BUFFER);
			});
	}

	@Test
	void defaultLocationMayBeMissing() {
		// No gpu/kernels/ on this class path, and gpu.kernels.locations not set.
		this.runner.run((context) -> assertThat(context.getBean(GpuKernels.class).kernels()).isEmpty());
	}

	@Test
	void configuredDirectoryThatDoesNotExistFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/sidecar/,classpath:kernels/sidcar/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOfSatisfying(KernelLocationNotFoundException.class, (ex) -> {
					assertThat(ex.location().location()).isEqualTo("classpath:kernels/sidcar/");
					assertThat(ex.location().configured()).isTrue();
					assertThat(ex.getMessage()).contains("'classpath:kernels/sidcar/'").contains("does not exist");
					// The directories under kernels/ that hold kernel files, as locations, the closest name first.
					assertThat(ex.kernelDirectories()).hasSize(5).startsWith("classpath:kernels/sidecar/");
					assertThat(ex.kernelDirectories()).allMatch((directory) -> directory.startsWith("classpath:kernels/")
							&& directory.endsWith("/") && !directory.equals("classpath:kernels/"));
					assertThat(ex.likelyMeant()).isEqualTo("classpath:kernels/sidecar/");
				}));
	}

	@Test
	void configuredDefaultLocationThatDoesNotExistFailsStartUp() {
		// Written out by the application, the default location is one it relies on.
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:gpu/kernels/")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOfSatisfying(KernelLocationNotFoundException.class, (ex) -> {
					assertThat(ex.getMessage()).contains("'classpath:gpu/kernels/'");
					assertThat(ex.likelyMeant()).isNull();
				}));
	}

	@Test
	void configuredFileSystemDirectoryOrFileThatDoesNotExistFailsStartUp() {
		for (String location : new String[] { "file:/does/not/exist/", "classpath:kernels/types/mised.cu" }) {
			this.runner.withPropertyValues("gpu.kernels.locations=" + location)
				.run((context) -> assertThat(context.getStartupFailure()).rootCause()
					.isInstanceOfSatisfying(KernelLocationNotFoundException.class,
							(ex) -> assertThat(ex.location().location()).isEqualTo(location)));
		}
	}

	@Test
	void patternThatMatchesNothingFailsStartUp() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/sidecar/*.fatbin")
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelLocationNotFoundException.class)
				.hasMessageContaining("'classpath:kernels/sidecar/*.fatbin'"));
	}

	@Test
	void patternLocationSkipsParamsFiles() {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/sidecar/*")
			.run((context) -> assertThat(context.getBean(GpuKernels.class).kernels()).containsOnlyKeys("scale"));
	}

	@Test
	void configuredDirectoryThatExistsWithoutKernelsStartsWithAWarning(CapturedOutput output) {
		this.runner.withPropertyValues("gpu.kernels.locations=classpath:kernels/empty/").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(GpuKernels.class).kernels()).isEmpty();
			assertThat(output).contains("gpu.kernels.locations entry 'classpath:kernels/empty/'")
				.contains("has no kernel files");
		});
	}

	@Test
	void onCudaAKernelWithoutCudaCodeIsLeftOutWithAWarning(CapturedOutput output) {
		// The backend argument decides which kernels the CUDA backend could load; the kernels are loaded
		// into a CPU context here (no GPU on the build machine), so only the decision and the report are tested.
		try (GpuContext gpu = GpuContext.builder().backend(Backend.CPU).poolSize(1).cpuThreads(1).open()) {
			GpuKernels kernels = GpuKernels.load(gpu.launcher(), Backend.CUDA,
					List.of(KernelLocation.ofDefault("classpath:kernels/types/")),
					new PathMatchingResourcePatternResolver(), Map.of("cpuOnly", KernelSource.named("cpu_only")
						.params(ParamType.INT)
						.cpu((block, args) -> {
						})));
			assertThat(kernels.kernels()).containsOnlyKeys("mixed");
			assertThat(output).contains("Kernels without CUDA code cannot run on the CUDA backend and were not loaded: "
					+ "cpu_only (bean 'cpuOnly')");
		}
	}

	@Test
	void onTheCpuBackendAKernelWithoutCudaCodeIsLoaded(CapturedOutput output) {
		this.runner.withBean("cpuOnly", KernelSource.class, () -> KernelSource.named("cpu_only")
			.params(ParamType.INT)
			.cpu((block, args) -> {
			})).run((context) -> {
				assertThat(context.getBean(GpuKernels.class).kernels()).containsOnlyKeys("cpu_only");
				assertThat(output).doesNotContain("Kernels without CUDA code");
			});
	}

	@Test
	void beanThatReferencesAMissingKernelResourceFailsStartUp() {
		this.runner
			.withBean("broken", KernelSource.class,
					() -> KernelSource.named("broken").params(ParamType.INT).cudaResource("gpu/kernels/missing.cu"))
			.run((context) -> assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(KernelCompilationException.class)
				.hasMessageContaining("gpu/kernels/missing.cu"));
	}

	@Test
	void kernelsAreLoadedBeforeTheLauncherIsInjected() {
		this.runner.withClassLoader(TestKernels.withDefaultLocationKernels())
			.withBean(KernelUser.class)
			.run((context) -> assertThat(context.getBean(KernelUser.class).params).hasSize(4));
	}

	static class KernelUser {

		final List<ParamType> params;

		KernelUser(GpuLauncher launcher) {
			this.params = launcher.kernel("saxpy").params();
		}

	}

}
