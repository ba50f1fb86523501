package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.KernelCompilationException;

/**
 * CUDA C compilation without a GPU: architecture choice, the messages when no compiler is
 * available, and the nvcc fallback (for real when this machine has nvcc, as the build machine
 * does).
 */
class CudaCompilerTest {

	private static final String SAXPY = """
			extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
			  int i = blockIdx.x * blockDim.x + threadIdx.x;
			  if (i < n) y[i] = a * x[i] + y[i];
			}
			""";

	@Test
	void architectureIsTheDevicesOrTheNewestTheCompilerKnowsBelowIt() {
		List<Integer> nvcc13 = List.of(75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121);
		assertThat(CudaCompiler.clampArch(90, nvcc13)).isEqualTo(90);
		assertThat(CudaCompiler.clampArch(121, nvcc13)).isEqualTo(121);
		assertThat(CudaCompiler.clampArch(130, nvcc13)).as("device newer than the compiler").isEqualTo(121);
		assertThat(CudaCompiler.clampArch(101, nvcc13)).isEqualTo(100);
		assertThat(CudaCompiler.clampArch(70, nvcc13)).as("device older than the compiler supports").isEqualTo(70);
		assertThat(CudaCompiler.clampArch(90, List.of())).as("unknown list").isEqualTo(90);
	}

	@Test
	void parsesNvccsArchitectureList() {
		assertThat(CudaCompiler.parseArchs("compute_75 compute_80 compute_90 compute_100 compute_110 compute_103\n"))
			.containsExactly(75, 80, 90, 100, 103, 110);
	}

	@Test
	void optionsThatChooseAnArchitectureAreRespected() {
		assertThat(CudaCompiler.namesArch(List.of("-lineinfo", "--gpu-architecture=sm_90"))).isTrue();
		assertThat(CudaCompiler.namesArch(List.of("-arch=compute_80"))).isTrue();
		assertThat(CudaCompiler.namesArch(List.of("-lineinfo", "--use_fast_math", "-DN=4"))).isFalse();
	}

	@Test
	void withoutAnyCompilerTheMessageNamesTheLibraryAndThePtxAlternative() {
		CudaCompiler none = new CudaCompiler(false, List.of(Path.of("/nonexistent/bin/nvcc")));
		assertThatThrownBy(() -> none.compile("saxpy", SAXPY, List.of(), 9, 0))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("Kernel 'saxpy' could not be compiled")
			.hasMessageContaining("no CUDA C compiler is available")
			.hasMessageContaining("libnvrtc.so.12")
			.hasMessageContaining("nvcc -ptx -arch=compute_90 kernel.cu")
			.hasMessageContaining(".ptx");
		assertThat(none.describe()).startsWith("none");
	}

	@Test
	void nvrtcProblemNamesLibnvrtc12WhenItCannotLoad() {
		String problem = CudaCompiler.Nvrtc.problem();
		if (problem != null) {
			assertThat(problem).contains("libnvrtc.so.12").doesNotContain("\n");
		}
	}

	@Test
	void nvccCompilesCudaCToPtx() {
		Path nvcc = nvccOrSkip();
		CudaCompiler compiler = new CudaCompiler(false, List.of(nvcc));
		CudaCompiler.Result result = compiler.compile("saxpy", SAXPY, List.of("-lineinfo"), 9, 0);
		String ptx = new String(result.ptx(), StandardCharsets.UTF_8);
		assertThat(ptx).contains(".entry saxpy", ".target sm_90");
		assertThat(result.compiler()).startsWith("nvcc");
	}

	@Test
	void nvccClampsAnArchitectureNewerThanItKnows() {
		Path nvcc = nvccOrSkip();
		CudaCompiler compiler = new CudaCompiler(false, List.of(nvcc));
		String ptx = new String(compiler.compile("saxpy", SAXPY, List.of(), 99, 9).ptx(), StandardCharsets.UTF_8);
		assertThat(ptx).contains(".entry saxpy").containsPattern("\\.target sm_\\d+");
	}

	@Test
	void nvccErrorsComeBackWithTheCompilerLog() {
		Path nvcc = nvccOrSkip();
		CudaCompiler compiler = new CudaCompiler(false, List.of(nvcc));
		assertThatThrownBy(() -> compiler.compile("broken", "extern \"C\" __global__ void broken() { undeclared_name = 1; }",
				List.of(), 9, 0))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("nvcc exited with status")
			.satisfies((ex) -> assertThat(((KernelCompilationException) ex).compilerLog()).contains("undeclared_name"));
	}

	@Test
	void theSystemCompilerPrefersNvrtcAndFallsBackToNvcc(@TempDir Path dir) throws Exception {
		CudaCompiler system = CudaCompiler.system();
		String description = system.describe();
		if (CudaCompiler.Nvrtc.problem() == null) {
			assertThat(description).startsWith("NVRTC");
		}
		else if (system.nvcc() != null) {
			assertThat(description).startsWith("nvcc").contains("libnvrtc.so.12");
		}
		else {
			assertThat(description).startsWith("none");
		}
		// A non-executable file named nvcc is not picked.
		Path fake = Files.writeString(dir.resolve("nvcc"), "#!/bin/sh\nexit 1\n");
		assertThat(new CudaCompiler(false, List.of(fake)).nvcc()).isNull();
	}

	private static Path nvccOrSkip() {
		Path nvcc = CudaCompiler.defaultNvccCandidates().stream().filter(Files::isExecutable).findFirst().orElse(null);
		Assumptions.assumeTrue(nvcc != null, "nvcc is not installed here");
		return nvcc;
	}

}
