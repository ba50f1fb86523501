package dev.gpucompute.kernels;

import org.junit.jupiter.api.Test;

import dev.gpucompute.ParamType;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** Tests for {@link KernelSignatures}. */
class KernelSignaturesTests {

	@Test
	void pointersAndScalars() {
		assertThat(KernelSignatures.fromCudaSource(
				"extern \"C\" __global__ void saxpy(int n, float a, const float* __restrict__ x, float *y) {}", "saxpy"))
			.containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER);
	}

	@Test
	void picksTheKernelNamedLikeTheFile() {
		String source = """
				extern "C" __global__ void helper(double d) {}
				extern "C" __global__ void main_kernel(long long n, unsigned int flags) {}
				""";
		assertThat(KernelSignatures.fromCudaSource(source, "main_kernel")).containsExactly(ParamType.LONG, ParamType.INT);
		assertThat(KernelSignatures.fromCudaSource(source, "helper")).containsExactly(ParamType.DOUBLE);
	}

	@Test
	void ignoresSignaturesInComments() {
		String source = """
				// __global__ void k(float* commented_out)
				/* __global__ void k(double also_commented) */
				extern "C" __global__ void k(int n) {}
				""";
		assertThat(KernelSignatures.fromCudaSource(source, "k")).containsExactly(ParamType.INT);
	}

	@Test
	void noParameters() {
		assertThat(KernelSignatures.fromCudaSource("extern \"C\" __global__ void tick() {}", "tick")).isEmpty();
		assertThat(KernelSignatures.fromCudaSource("extern \"C\" __global__ void tick(void) {}", "tick")).isEmpty();
	}

	@Test
	void missingKernel() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> KernelSignatures.fromCudaSource("__global__ void other(int n) {}", "mine"))
			.withMessageContaining("'__global__ void mine(...)'");
	}

	@Test
	void namePrefixIsNotAMatch() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> KernelSignatures.fromCudaSource("__global__ void scale2(int n) {}", "scale"));
	}

	@Test
	void unsupportedTypes() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> KernelSignatures.fromCudaSource("__global__ void k(int n, short s) {}", "k"))
			.withMessageContaining("parameter 1")
			.withMessageContaining("'short'");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> KernelSignatures.fromCudaSource("__global__ void k(Params p) {}", "k"))
			.withMessageContaining("'Params'");
	}

	@Test
	void paramsFile() {
		assertThat(KernelSignatures.fromParamsFile("# n, a, x, y\nint, FLOAT\n Buffer buffer  # trailing\n\nlong,double"))
			.containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER, ParamType.LONG,
					ParamType.DOUBLE);
		assertThat(KernelSignatures.fromParamsFile("# no parameters\n")).isEmpty();
		assertThatIllegalArgumentException().isThrownBy(() -> KernelSignatures.fromParamsFile("int, half"))
			.withMessageContaining("'half' is not a parameter type");
	}

}
