package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.gpucompute.KernelCompilationException;

/**
 * NVRTC through JNA, for real, with whatever NVRTC this machine has: CUDA 13's
 * {@code libnvrtc.so.13} from the {@code nvidia-cuda-nvrtc} wheel, or Debian's CUDA 12.4
 * {@code libnvrtc.so.12} that {@code .ci/run} downloads and names in {@code GPU_NVRTC_LIBRARY}.
 * NVRTC needs no GPU. Skipped when no NVRTC is found, failed instead when {@code NVRTC_REQUIRED=1}.
 */
class NvrtcLibraryTests {

	private static final String SAXPY = """
			// A comment in UTF-8: µ, ü
			extern "C" __global__ void saxpy(int n, float a, const float* x, float* y) {
			  int i = blockIdx.x * blockDim.x + threadIdx.x;
			  if (i < n) y[i] = a * x[i] + y[i];
			}
			""";

	private static NvrtcLibrary nvrtc;

	@BeforeAll
	static void findNvrtc() {
		CudaCompiler.JnaChoice choice = new CudaCompiler(NvrtcLocator.system(), false, List.of()).jnaNvrtc(0);
		if (choice.library() == null) {
			if ("1".equals(System.getenv("NVRTC_REQUIRED"))) {
				Assertions.fail("NVRTC_REQUIRED=1 but: " + choice.problem());
			}
			Assumptions.abort("No NVRTC here: " + choice.problem());
		}
		nvrtc = choice.library();
	}

	@Test
	void reportsItsVersionAndArchitectures() {
		assertThat(nvrtc.describe()).matches("NVRTC \\d+\\.\\d+ \\(/.*libnvrtc\\.so.*\\)");
		assertThat(nvrtc.major()).isGreaterThanOrEqualTo(11);
		assertThat(nvrtc.archs()).isNotEmpty().contains(75, 80);
	}

	@Test
	void compilesCudaCToPtxForTheGivenArchitecture() {
		NvrtcLibrary.Output output = nvrtc.compile("saxpy", SAXPY, List.of("--gpu-architecture=compute_75"), false);
		String ptx = new String(output.image(), StandardCharsets.UTF_8);
		assertThat(output.cubin()).isFalse();
		assertThat(ptx).contains(".target sm_75", ".entry saxpy(").doesNotContain("\0");
	}

	@Test
	void compilesCudaCToACubinOfTheRealArchitecture() {
		NvrtcLibrary.Output output = nvrtc.compile("saxpy", SAXPY, List.of("--gpu-architecture=sm_80", "-lineinfo"), true);
		assertThat(output.cubin()).isTrue();
		ByteBuffer elf = ByteBuffer.wrap(output.image()).order(ByteOrder.LITTLE_ENDIAN);
		assertThat(elf.getInt(0)).as("ELF magic").isEqualTo(0x464C457F);
		assertThat(Short.toUnsignedInt(elf.getShort(18))).as("e_machine EM_CUDA").isEqualTo(190);
	}

	@Test
	void aCompileErrorComesBackWithNvrtcsLog() {
		assertThatThrownBy(() -> nvrtc.compile("broken", "extern \"C\" __global__ void broken() { undeclared_name = 1; }",
				List.of("--gpu-architecture=compute_75"), false))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("NVRTC_ERROR_COMPILATION")
			.satisfies((ex) -> assertThat(((KernelCompilationException) ex).compilerLog()).contains("undeclared_name"));
	}

	@Test
	void theCompilerPrefersJnaNvrtcAndPicksCubinOrPtxByWhatNvrtcKnows() {
		CudaCompiler compiler = new CudaCompiler(NvrtcLocator.system(), false, List.of());
		assertThat(compiler.describe()).startsWith("NVRTC").endsWith("through JNA");
		CudaCompiler.Result known = compiler.compile("saxpy", SAXPY, List.of(), 8, 0, 13000);
		assertThat(known.compiler()).contains("through JNA, cubin sm_80");
		assertThat(known.image()[0]).isEqualTo((byte) 0x7F);
		int newest = nvrtc.archs().get(nvrtc.archs().size() - 1);
		CudaCompiler.Result future = compiler.compile("saxpy", SAXPY, List.of(), 99, 9, 99000);
		assertThat(future.compiler()).as("a device newer than this NVRTC gets PTX for the driver to JIT")
			.contains("PTX compute_" + newest);
		assertThat(new String(future.image(), StandardCharsets.UTF_8)).contains(".target sm_" + newest);
		CudaCompiler.Result named = compiler.compile("saxpy", SAXPY, List.of("-arch=compute_75"), 9, 0, 13000);
		assertThat(named.compiler()).contains("PTX as the options say");
	}

	@Test
	void kernelsCompileConcurrently() throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(4);
		try {
			List<Future<NvrtcLibrary.Output>> outputs = new ArrayList<>();
			for (int i = 0; i < 8; i++) {
				String source = SAXPY.replace("saxpy", "saxpy" + i);
				int index = i;
				outputs.add(pool.submit(() -> nvrtc.compile("saxpy" + index, source, List.of("--gpu-architecture=compute_80"),
						false)));
			}
			for (int i = 0; i < outputs.size(); i++) {
				assertThat(new String(outputs.get(i).get().image(), StandardCharsets.UTF_8)).contains(".entry saxpy" + i + "(");
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	@Test
	void aFileThatIsNotNvrtcIsPassedOverWithItsReason() {
		NvrtcLocator fake = new NvrtcLocator(Path.of("/nonexistent-root"), java.util.Map.of(), "/etc/hostname", null);
		CudaCompiler.JnaChoice choice = new CudaCompiler(fake, false, List.of()).jnaNvrtc(0);
		assertThat(choice.library()).isNull();
		assertThat(choice.problem()).startsWith("no NVRTC library could be loaded through JNA (/etc/hostname: ");
	}

}
