package dev.gpucompute;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class KernelSourceTest {

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
		assertThat(KernelSource.formOf("x.fatbin")).isEqualTo(KernelSource.CudaForm.FATBIN);
		assertThat(KernelSource.formOf("X.CUBIN")).isEqualTo(KernelSource.CudaForm.CUBIN);
		assertThatThrownBy(() -> KernelSource.formOf("x.txt")).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> KernelSource.named("k").cudaResource("missing/k.cu"))
			.isInstanceOf(KernelCompilationException.class)
			.hasMessageContaining("missing/k.cu");
	}

	@Test
	void linearConfigCoversAllElements() {
		LaunchConfig config = LaunchConfig.linear(1000, 256);
		assertThat(config.grid()).isEqualTo(Dim3.of(4));
		assertThat(config.block()).isEqualTo(Dim3.of(256));
		assertThat(LaunchConfig.linear(1024, 256).grid().x()).isEqualTo(4);
	}

}
