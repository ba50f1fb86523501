package dev.gpucompute.kernels;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.StreamLease;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Tests for {@link LoadedKernels}: kernels from files and sources loaded into CPU-backend contexts,
 * which kernels a backend cannot run, and where a load failure came from.
 */
class LoadedKernelsTests {

	private static final String SAXPY = "extern \"C\" __global__ void saxpy(int n, float a, const float* x, float* y) {}\n";

	/** The CPU body of saxpy, paired with the file by name. */
	private static final KernelSource SAXPY_CPU = KernelSource.named("saxpy")
		.params(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER)
		.cpu((block, args) -> {
			int n = args.i32(0);
			float a = args.f32(1);
			for (long i = block.firstIndex(); i < block.endIndex(n); i++) {
				args.floats(3).put((int) i, a * args.floats(2).get((int) i) + args.floats(3).get((int) i));
			}
		});

	@TempDir
	Path dir;

	@Test
	void kernelsFromADirectoryLoadAndLaunchWithTheirCpuBodies() throws IOException {
		Path file = Files.writeString(this.dir.resolve("saxpy.cu"), SAXPY);
		List<KernelDefinition> definitions = KernelFiles.scan(this.dir).define(List.of(SAXPY_CPU));
		try (GpuContext context = cpu(1, 0)) {
			GpuLauncher launcher = context.launcher();
			LoadedKernels loaded = LoadedKernels.load(launcher, definitions);
			assertThat(loaded.kernels()).containsOnlyKeys("saxpy");
			assertThat(loaded.origin("saxpy")).isEqualTo(file + " with KernelSource 'saxpy'");
			assertThat(loaded.origin("other")).isNull();
			assertThat(loaded.devices()).isEqualTo(1);
			assertThat(loaded.notLoaded()).isEmpty();
			assertThat(loaded.kernels().get("saxpy").kernel()).isSameAs(launcher.kernel("saxpy"));
			float[] y = { 1, 2, 3 };
			try (StreamLease lease = context.streams().acquire();
					DeviceBuffer xs = launcher.upload(HostArray.of(new float[] { 10, 20, 30 }));
					DeviceBuffer ys = launcher.upload(HostArray.of(y))) {
				launcher.launch(lease.stream(), launcher.kernel("saxpy"), LaunchConfig.linear(3, 2), 3, 2f, xs, ys);
				ys.download(HostArray.of(y), lease.stream()).join();
			}
			assertThat(y).containsExactly(21, 42, 63);
		}
	}

	@Test
	void onTheCudaBackendAKernelWithoutCudaCodeIsNotLoadedAndSaidSo() throws IOException {
		// The backend argument decides; the kernels are loaded into a CPU context (no GPU on the build machine).
		Files.writeString(this.dir.resolve("saxpy.cu"), SAXPY);
		KernelSource cpuOnly = KernelSource.named("cpu_only").params(ParamType.INT).cpu((block, args) -> {
		});
		List<KernelDefinition> definitions = KernelFiles.scan(this.dir).define(List.of(cpuOnly));
		try (GpuContext context = cpu(1, 0)) {
			String[] log = new String[1];
			LoadedKernels loaded = withStandardError(log,
					() -> LoadedKernels.load(List.of(context.launcher()), Backend.CUDA, definitions));
			assertThat(loaded.kernels()).containsOnlyKeys("saxpy");
			assertThat(loaded.notLoaded()).extracting(KernelDefinition::name).containsExactly("cpu_only");
			assertThat(context.launcher().kernels()).extracting((kernel) -> kernel.name()).containsExactly("saxpy");
			assertThat(log[0]).contains("Kernels without CUDA code cannot run on the CUDA backend and were not loaded: "
					+ "cpu_only (KernelSource 'cpu_only')");
		}
	}

	@Test
	void onTheCpuBackendAKernelWithoutACpuBodyLoadsWithAWarning() throws IOException {
		Path file = Files.writeString(this.dir.resolve("saxpy.cu"), SAXPY);
		List<KernelDefinition> definitions = KernelFiles.scan(this.dir).define();
		try (GpuContext context = cpu(1, 0)) {
			String[] log = new String[1];
			LoadedKernels loaded = withStandardError(log, () -> LoadedKernels.load(context.launcher(), definitions));
			assertThat(loaded.kernels()).containsOnlyKeys("saxpy");
			assertThat(log[0]).contains("Kernels without a CPU implementation load on the CPU backend but fail when "
					+ "launched: saxpy (" + file + ")");
		}
	}

	@Test
	void everyDeviceLoadsEveryKernel() throws IOException {
		Files.writeString(this.dir.resolve("saxpy.cu"), SAXPY);
		List<KernelDefinition> definitions = KernelFiles.scan(this.dir).define(List.of(SAXPY_CPU));
		try (GpuContext first = cpu(2, 0); GpuContext second = cpu(2, 1)) {
			LoadedKernels loaded = LoadedKernels.load(List.of(first.launcher(), second.launcher()), Backend.CPU,
					definitions);
			assertThat(loaded.devices()).isEqualTo(2);
			assertThat(loaded.kernels().get("saxpy").kernel()).isSameAs(first.launcher().kernel("saxpy"));
			assertThat(second.launcher().kernel("saxpy").source().cpu()).isSameAs(SAXPY_CPU.cpu());
		}
	}

	@Test
	void aKernelTheBackendRefusesFailsNamingItsOriginAndDevice() throws IOException {
		Path file = Files.writeString(this.dir.resolve("saxpy.cu"), SAXPY);
		List<KernelDefinition> definitions = KernelFiles.scan(this.dir).define(List.of(SAXPY_CPU));
		try (GpuContext first = cpu(2, 0); GpuContext second = cpu(2, 1)) {
			// A different kernel of that name is already loaded on the second device.
			second.launcher().load(KernelSource.named("saxpy").params(ParamType.INT).cpu((block, args) -> {
			}));
			assertThatExceptionOfType(KernelLoadException.class)
				.isThrownBy(() -> LoadedKernels.load(List.of(first.launcher(), second.launcher()), Backend.CPU,
						definitions))
				.satisfies((ex) -> {
					assertThat(ex.kernelName()).isEqualTo("saxpy");
					assertThat(ex.origin()).isEqualTo(file + " with KernelSource 'saxpy', on device 1");
					assertThat(ex.getMessage()).startsWith("Loading kernel 'saxpy' from " + file);
					assertThat(ex.getCause()).hasMessageContaining("A different kernel named 'saxpy' is already loaded");
				});
		}
	}

	@Test
	void atLeastOneLauncherIsNeeded() {
		assertThatIllegalArgumentException().isThrownBy(() -> LoadedKernels.load(List.of(), Backend.CPU, List.of()));
	}

	private static GpuContext cpu(int devices, int ordinal) {
		return GpuContext.builder().backend(Backend.CPU).cpuDevices(devices).device(ordinal).poolSize(1).open();
	}

	/** Runs {@code action} with standard error (where slf4j-simple logs) captured into {@code log[0]}. */
	private static <T> T withStandardError(String[] log, java.util.function.Supplier<T> action) {
		PrintStream original = System.err;
		ByteArrayOutputStream captured = new ByteArrayOutputStream();
		System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
		try {
			return action.get();
		}
		finally {
			System.setErr(original);
			log[0] = captured.toString(StandardCharsets.UTF_8);
		}
	}

}
