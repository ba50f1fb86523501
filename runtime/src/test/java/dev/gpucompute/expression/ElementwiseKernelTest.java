package dev.gpucompute.expression;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.GpuContext;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.ParamType;
import dev.gpucompute.internal.expression.JavaBodies;

/** Elementwise kernels on the CPU backend: what they compute, whatever the launch, and how they are defined. */
class ElementwiseKernelTest {

	private GpuContext gpu;

	@BeforeEach
	void open() {
		this.gpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).open();
	}

	@AfterEach
	void close() {
		this.gpu.close();
	}

	private static final KernelSource SAXPY = ElementwiseKernel.named("saxpy")
		.in("float a, float[] x")
		.out("float[] y")
		.body("y = a * x + y")
		.build();

	@Test
	void saxpyComputesEveryElementAsJavaWould() {
		int n = 10_007;
		float[] x = random(n, 1);
		float[] y = random(n, 2);
		float[] result = run(SAXPY, LaunchConfig.linear(n, 256), n, 2.5f, x, y);
		for (int i = 0; i < n; i++) {
			assertThat(result[i]).as("element %d", i).isEqualTo(2.5f * x[i] + y[i]);
		}
	}

	@Test
	void anyLaunchConfigurationCoversEveryElementOnce() {
		int n = 5_000;
		float[] x = random(n, 3);
		float[] y = random(n, 4);
		float[] expected = run(SAXPY, LaunchConfig.linear(n, 256), n, 1.5f, x, y);
		for (LaunchConfig config : new LaunchConfig[] { LaunchConfig.of(Dim3.of(1), Dim3.of(1)),
				LaunchConfig.of(Dim3.of(3), Dim3.of(64)), LaunchConfig.of(Dim3.of(2, 3, 2), Dim3.of(7, 2)),
				LaunchConfig.linear(3 * n, 1024) }) {
			assertThat(run(SAXPY, config, n, 1.5f, x, y)).as("%s", config).containsExactly(expected);
		}
	}

	@Test
	void theSourceIsAnOrdinaryKernelSourceWithIeeeOptions() {
		assertThat(SAXPY.params()).containsExactly(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER);
		assertThat(SAXPY.compileOptions()).contains("-fmad=false", "-prec-div=true", "-prec-sqrt=true", "-ftz=false");
		assertThat(SAXPY.cudaText()).contains("extern \"C\" __global__ void saxpy(int n, float a, const float* __restrict__ x, "
				+ "float* __restrict__ y)");
		ExpressionKernel kernel = ExpressionKernel.of(SAXPY).orElseThrow();
		assertThat(kernel.bitExact()).isTrue();
		assertThat(kernel.ulps()).isZero();
		assertThat(ExpressionKernel.of(KernelSource.named("plain").cpu((block, args) -> {
		}))).isEmpty();
	}

	@Test
	void theSameDefinitionTwiceIsTheSameCodeCompiledOnce() {
		int before = JavaBodies.compiled();
		KernelSource again = ElementwiseKernel.named("saxpy").in("float a, float[] x").out("float[] y")
			.body("y = a * x + y").build();
		assertThat(JavaBodies.compiled()).isEqualTo(before);
		assertThat(again.sameCode(SAXPY)).isTrue();
		assertThat(again.cpu()).isSameAs(SAXPY.cpu());
		this.gpu.launcher().load(SAXPY);
		this.gpu.launcher().load(again); // the same kernel: no "different kernel named 'saxpy'"
	}

	@Test
	void fastMathIsNamedAndGivesUpBitExactness() {
		KernelSource fast = ElementwiseKernel.named("fast_saxpy").in("float a, float[] x").out("float[] y")
			.body("y = a * x + y").fastMathGivingUpBitParity().build();
		assertThat(fast.compileOptions()).containsExactly("--use_fast_math");
		assertThat(ExpressionKernel.of(fast).orElseThrow().bitExact()).isFalse();
		assertThat(ExpressionKernel.of(fast).orElseThrow().ulps()).isEqualTo(-1);
	}

	@Test
	void aTranscendentalStatesItsUlps() {
		KernelSource soft = ElementwiseKernel.named("softplus").in("float[] x").out("float[] y")
			.body("y = log1p(exp(x))").build();
		ExpressionKernel kernel = ExpressionKernel.of(soft).orElseThrow();
		assertThat(kernel.bitExact()).isFalse();
		assertThat(kernel.inexactFunctions()).containsExactly("exp", "log1p");
		assertThat(kernel.ulps()).isEqualTo(3);
	}

	private float[] run(KernelSource source, LaunchConfig config, Object... args) {
		var launcher = this.gpu.launcher();
		Object[] launchArgs = args.clone();
		DeviceBuffer[] buffers = new DeviceBuffer[args.length];
		try {
			for (int k = 0; k < args.length; k++) {
				if (args[k] instanceof float[] values) {
					buffers[k] = launcher.upload(HostArray.of(values));
					launchArgs[k] = buffers[k];
				}
			}
			launcher.launch(source, config, launchArgs);
			float[] last = new float[((float[]) args[args.length - 1]).length];
			buffers[args.length - 1].download(HostArray.of(last)).join();
			return last;
		}
		finally {
			for (DeviceBuffer buffer : buffers) {
				if (buffer != null) {
					buffer.close();
				}
			}
		}
	}

	static float[] random(int n, long seed) {
		SplittableRandom random = new SplittableRandom(seed);
		float[] values = new float[n];
		for (int i = 0; i < n; i++) {
			values[i] = (float) (random.nextDouble() * 2 - 1);
		}
		return values;
	}

	@Test
	void aMistakeNamesItsLineColumnAndThePlace() {
		assertThatThrownBy(() -> ElementwiseKernel.named("k").in("float[] x").out("float[] y")
			.body("float t = x * 2;\ny = sqr(t)").build())
			.isInstanceOf(KernelExpressionException.class)
			.hasMessageStartingWith("Kernel 'k', body, line 2, column 5: unknown function 'sqr'; the functions are: abs, acos,")
			.hasMessageEndingWith("\n  y = sqr(t)\n      ^");
	}

}
