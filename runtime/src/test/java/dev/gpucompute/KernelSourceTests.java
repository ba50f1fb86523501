package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KernelSourceTests {

	@Test
	void isImmutable() {
		KernelSource base = KernelSource.named("k");
		KernelSource withParams = base.params(ParamType.INT, ParamType.BUFFER);
		assertThat(base.paramCount()).isZero();
		assertThat(withParams.params()).containsExactly(ParamType.INT, ParamType.BUFFER);
		KernelSource cuda = withParams.cuda("extern \"C\" __global__ void k(int n, float* x) {}");
		assertThat(withParams.cudaForm()).isNull();
		assertThat(cuda.cudaForm()).isEqualTo(KernelSource.CudaForm.SOURCE);
		assertThat(cuda.cudaText()).contains("__global__");
		assertThat(cuda.cpu()).isNull();
	}

	@Test
	void rejectsNamesThatAreNotCIdentifiers() {
		assertThatThrownBy(() -> KernelSource.named("my-kernel")).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("C identifier");
		assertThatThrownBy(() -> KernelSource.named(null)).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void readsTheFormFromAResourceExtension() {
		KernelSource ptx = KernelSource.named("append").cudaResource("contract/contract-kernels.ptx");
		assertThat(ptx.cudaForm()).isEqualTo(KernelSource.CudaForm.PTX);
		assertThat(ptx.cudaText()).contains(".entry append");
		KernelSource cu = KernelSource.named("append").cudaResource("/contract/contract-kernels.cu");
		assertThat(cu.cudaForm()).isEqualTo(KernelSource.CudaForm.SOURCE);
		assertThat(cu.prebuiltForm()).as("the .ptx beside the .cu").isEqualTo(KernelSource.CudaForm.PTX);
		assertThat(new String(cu.prebuiltCode(), java.nio.charset.StandardCharsets.UTF_8)).isEqualTo(ptx.cudaText());
		assertThat(KernelSource.formOf("x.fatbin")).isEqualTo(KernelSource.CudaForm.FATBIN);
		assertThat(KernelSource.formOf("X.CUBIN")).isEqualTo(KernelSource.CudaForm.CUBIN);
		assertThatThrownBy(() -> KernelSource.formOf("x.txt")).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> KernelSource.named("k").cudaResource("missing/k.cu"))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("missing/k.cu");
	}

	@Test
	void prebuiltCodeGoesWithCudaCSourceOnly() {
		KernelSource cu = KernelSource.named("k").cuda("extern \"C\" __global__ void k() {}");
		KernelSource both = cu.prebuilt(KernelSource.CudaForm.FATBIN, new byte[] { 1, 2 });
		assertThat(both.prebuiltForm()).isEqualTo(KernelSource.CudaForm.FATBIN);
		assertThat(both.prebuiltCode()).containsExactly(1, 2);
		assertThat(both.params(ParamType.INT).prebuiltForm()).as("kept by other changes").isEqualTo(KernelSource.CudaForm.FATBIN);
		assertThat(both.cuda("extern \"C\" __global__ void k() { }").prebuiltForm()).as("dropped with new source").isNull();
		assertThat(cu.prebuiltForm()).isNull();
		assertThatThrownBy(() -> KernelSource.named("k").ptx(".version 7.0").prebuilt(KernelSource.CudaForm.CUBIN, new byte[1]))
			.isInstanceOf(IllegalStateException.class);
		assertThatThrownBy(() -> cu.prebuilt(KernelSource.CudaForm.SOURCE, new byte[1])).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void linearConfigCoversAllElements() {
		LaunchConfig config = LaunchConfig.linear(1000, 256);
		assertThat(config.grid()).isEqualTo(Dim3.of(4));
		assertThat(config.block()).isEqualTo(Dim3.of(256));
		assertThat(LaunchConfig.linear(1024, 256).grid().x()).isEqualTo(4);
	}

}
