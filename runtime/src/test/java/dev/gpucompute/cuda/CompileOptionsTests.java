package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.KernelSource;
import dev.gpucompute.expression.ElementwiseKernel;

/**
 * The context's compile options next to a kernel's own: the kernel's win for what they set, so that
 * NVRTC never sees an option twice ("defined more than once": measured with NVRTC 12.4 for
 * {@code -ftz} and {@code -std}) and a context-wide {@code --use_fast_math} never turns an expression
 * kernel's IEEE {@code sinf} into the approximate instruction (which NVRTC 12.4 does, silently, when
 * both are given). Everything else of the context's applies to every kernel.
 */
class CompileOptionsTests {

	private static final KernelSource IEEE = ElementwiseKernel.named("options_ieee").in("float[] x").out("float[] y")
		.body("y = sin(x)").build();

	private static final KernelSource FAST = ElementwiseKernel.named("options_fast").in("float[] x").out("float[] y")
		.body("y = sin(x)").fastMathGivingUpBitParity().build();

	@Test
	void anExpressionKernelsIeeeOptionsAndDialectWinOverTheContextsMathOptions() {
		List<String> context = List.of("-ftz=true", "--use_fast_math", "-lineinfo", "-std=c++14", "--prec-div=false",
				"-maxrregcount=64");
		CompileOptions.Merged merged = CompileOptions.merge(context, IEEE.compileOptions());
		assertThat(merged.options()).containsExactly("-lineinfo", "-maxrregcount=64", "-std=c++17", "-fmad=false",
				"-prec-div=true", "-prec-sqrt=true", "-ftz=false");
		assertThat(merged.dropped()).containsExactly("-ftz=true", "--use_fast_math", "-std=c++14", "--prec-div=false");
	}

	@Test
	void aFastMathKernelLeavesOutTheContextsSettingsOfWhatFastMathSets() {
		CompileOptions.Merged merged = CompileOptions.merge(List.of("-ftz=false", "-fmad=false", "-lineinfo"),
				FAST.compileOptions());
		assertThat(merged.options()).containsExactly("-lineinfo", "-std=c++17", "--use_fast_math");
		assertThat(merged.dropped()).containsExactly("-ftz=false", "-fmad=false");
	}

	@Test
	void aKernelWithoutOptionsGetsTheContextsAsTheyAre() {
		List<String> context = List.of("--use_fast_math", "-std=c++14", "-lineinfo");
		CompileOptions.Merged merged = CompileOptions.merge(context, List.of());
		assertThat(merged.options()).isEqualTo(context);
		assertThat(merged.dropped()).isEmpty();
		assertThat(CompileOptions.merge(List.of("-lineinfo"), List.of("-ftz=true")).options())
			.containsExactly("-lineinfo", "-ftz=true");
	}

}
