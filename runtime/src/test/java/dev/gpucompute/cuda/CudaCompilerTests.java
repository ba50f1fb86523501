package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.KernelCompilationException;

/**
 * CUDA C compilation without a GPU: architecture choice, the messages when no compiler is
 * available, and the nvcc fallback, for real where this machine has nvcc. CI has none (Debian's
 * toolkit is too large to install there, see {@code .ci/run}), so the nvcc tests skip there; the GPU
 * check runs this class on a machine with the CUDA toolkit and {@code CUDA_COMPILER_REQUIRED=1},
 * where a missing nvcc fails them instead.
 */
class CudaCompilerTests {

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
			.hasMessageContaining("libnvrtc.so.13")
			.hasMessageContaining("<name>.fatbin or <name>.ptx beside <name>.cu")
			.hasMessageContaining("nvcc -ptx -arch=compute_90 kernel.cu")
			.hasMessageContaining(".ptx");
		assertThat(none.describe()).startsWith("none");
	}

	@Test
	void nvccCompilesCudaCToAFatbinWithMachineCodeAndPtx() {
		Path nvcc = nvccOrSkip();
		CudaCompiler compiler = new CudaCompiler(false, List.of(nvcc));
		CudaCompiler.Result result = compiler.compile("saxpy", SAXPY, List.of("-lineinfo"), 9, 0);
		assertThat(fatbinEntries(result.image())).as("(kind, sm) of each entry; kind 2 is machine code, 1 is PTX")
			.containsExactlyInAnyOrder(List.of(2, 90), List.of(1, 90));
		assertThat(result.compiler()).startsWith("nvcc");
	}

	@Test
	void nvccClampsAnArchitectureNewerThanItKnows() {
		Path nvcc = nvccOrSkip();
		CudaCompiler compiler = new CudaCompiler(false, List.of(nvcc));
		List<List<Integer>> entries = fatbinEntries(compiler.compile("saxpy", SAXPY, List.of(), 99, 9).image());
		assertThat(entries).hasSize(2);
		int sm = entries.get(0).get(1);
		assertThat(sm).as("the newest architecture nvcc knows, below the device's 99.9").isBetween(75, 998);
		assertThat(entries).containsExactlyInAnyOrder(List.of(2, sm), List.of(1, sm));
	}

	@Test
	void anNvccThatCannotCompileIsPassedOverWithItsReason(@TempDir Path dir) throws Exception {
		Path broken = dir.resolve("nvcc");
		Files.writeString(broken, "#!/bin/sh\necho 'nvcc fatal   : Failed to preprocess host compiler properties.' >&2\nexit 1\n");
		assertThat(broken.toFile().setExecutable(true)).isTrue();
		CudaCompiler onlyBroken = new CudaCompiler(false, List.of(broken));
		assertThat(onlyBroken.nvcc()).isNull();
		assertThatThrownBy(() -> onlyBroken.compile("saxpy", SAXPY, List.of(), 9, 0))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("no CUDA C compiler is available")
			.hasMessageContaining("nvcc at " + broken + " cannot compile")
			.hasMessageContaining("Failed to preprocess host compiler properties");
		assertThat(onlyBroken.describe()).startsWith("none").contains("cannot compile");
		Path working = nvccOrSkip();
		assertThat(new CudaCompiler(false, List.of(broken, working)).nvcc()).isEqualTo(working);
	}

	/**
	 * The (kind, sm) pairs of a fatbin's entries. The layout (a 16-byte header with the magic
	 * 0xBA55ED50 and the payload size, then entries with kind at 0, their header size at 4, their
	 * payload size at 8 and the SM version at 28) is how nvcc 12 and 13 write it.
	 */
	private static List<List<Integer>> fatbinEntries(byte[] image) {
		ByteBuffer fatbin = ByteBuffer.wrap(image).order(ByteOrder.LITTLE_ENDIAN);
		assertThat(fatbin.getInt(0)).as("fatbin magic").isEqualTo(0xBA55ED50);
		int headerSize = Short.toUnsignedInt(fatbin.getShort(6));
		long end = headerSize + fatbin.getLong(8);
		List<List<Integer>> entries = new ArrayList<>();
		for (int entry = headerSize; entry < end;) {
			int kind = Short.toUnsignedInt(fatbin.getShort(entry));
			int entryHeader = fatbin.getInt(entry + 4);
			long payload = fatbin.getLong(entry + 8);
			entries.add(List.of(kind, fatbin.getInt(entry + 28)));
			entry += entryHeader + (int) payload;
		}
		return entries;
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
	void theSystemCompilerPrefersNvrtcThroughJnaThenJCudasThenNvcc(@TempDir Path dir) throws Exception {
		CudaCompiler system = CudaCompiler.system();
		String description = system.describe();
		if (system.jnaNvrtc(0).library() != null) {
			assertThat(description).startsWith("NVRTC").endsWith("through JNA");
		}
		else if (JCudaNvrtc.problem() == null) {
			assertThat(description).startsWith("NVRTC").endsWith("through JCuda");
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
		Path nvcc = NvccCompiler.defaultCandidates().stream().filter(Files::isExecutable).findFirst().orElse(null);
		if (nvcc == null && "1".equals(System.getenv("CUDA_COMPILER_REQUIRED"))) {
			Assertions.fail("CUDA_COMPILER_REQUIRED=1 but no nvcc is on PATH, under CUDA_HOME or CUDA_PATH, or in "
					+ "/usr/local/cuda/bin");
		}
		Assumptions.assumeTrue(nvcc != null, "nvcc is not installed here");
		return nvcc;
	}

}
