package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * JCuda's NVRTC route. Without {@code libnvrtc.so.12} only its failure message and text handling
 * run; with it, a compile to PTX runs for real (NVRTC needs no GPU). CI fetches Debian's CUDA 12
 * NVRTC and names it in {@code GPU_NVRTC_LIBRARY}, outside the loader's path, with
 * {@code JCUDA_NVRTC_REQUIRED=1}: there the compile must run, not skip.
 */
class JCudaNvrtcTests {

	@Test
	void problemNamesLibnvrtc12WhenItCannotLoadAndIsStable() {
		String problem = JCudaNvrtc.problem();
		if (problem != null) {
			assertThat(problem).contains("libnvrtc.so.12").doesNotContain("\n");
			assertThat(JCudaNvrtc.version()).isEqualTo("NVRTC");
			assertThat(JCudaNvrtc.archs()).isEmpty();
		}
		assertThat(JCudaNvrtc.problem()).as("loaded once, the same answer after").isEqualTo(problem);
	}

	@Test
	void trailingNulsAreStripped() {
		assertThat(JCudaNvrtc.stripNul("ptx\0\0")).isEqualTo("ptx");
		assertThat(JCudaNvrtc.stripNul("a\0b\0")).as("only at the end").isEqualTo("a\0b");
		assertThat(JCudaNvrtc.stripNul("\0")).isEmpty();
		assertThat(JCudaNvrtc.stripNul(null)).isEmpty();
	}

	@Test
	void compilesToPtxForTheGivenArchitectureWhenTheBindingLoads() {
		String problem = JCudaNvrtc.problem();
		if (problem != null && "1".equals(System.getenv("JCUDA_NVRTC_REQUIRED"))) {
			Assertions.fail("JCUDA_NVRTC_REQUIRED=1 but: " + problem);
		}
		Assumptions.assumeTrue(problem == null, "JCuda's NVRTC binding does not load here: " + problem);
		CudaCompiler.Result result = JCudaNvrtc.compile("k", "extern \"C\" __global__ void k() {}", List.of(), 75);
		assertThat(new String(result.image(), StandardCharsets.UTF_8)).contains(".target sm_75").doesNotContain("\0");
		assertThat(result.compiler()).isEqualTo(JCudaNvrtc.version());
	}

}
