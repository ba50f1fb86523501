package dev.gpucompute.expression;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.function.BinaryOperator;

import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.graph.GpuGraph;
import dev.gpucompute.graph.GpuGraphs;
import dev.gpucompute.graph.GraphCapture;
import dev.gpucompute.graph.GraphCaptureException;

/**
 * Reductions on the CPU backend: the documented order, reimplemented here independently of the
 * generator, gives the same bits, whatever the number of workers or (segmented) the launch configuration.
 */
class ReductionKernelTests {

	static final Reduction SUM = ReductionKernel.named("sum").in("float[] x").out("float[] total").map("x")
		.reduce("a + b").identity("0.0f").build();

	static final Reduction NORM = ReductionKernel.named("norm2").in("float[] x").out("float[] result").map("x * x")
		.reduce("a + b").identity("0.0f").postMap("sqrt(a)").build();

	static final Reduction SEGMENT_SUM = ReductionKernel.named("segment_sum").in("float[] x").out("float[] sums")
		.map("x").reduce("a + b").identity("0.0f").segmented().build();

	static final Reduction COUNT_ABOVE = ReductionKernel.named("count_above").in("float level, float[] x")
		.out("long[] count").map("x > level ? 1L : 0L").reduce("a + b").identity("0L").build();

	static final Reduction MEAN_OF_MAX = ReductionKernel.named("segment_max").in("double[] x").out("double[] peaks")
		.map("x").reduce("fmax(a, b)").identity("-1.0 / 0.0").postMap("a / segmentLength").segmented().build();

	/** The documented order: 256 lanes, each left to right, then the halving tree over the lanes that exist. */
	static float reduceRange(float[] v, BinaryOperator<Float> op) {
		int lanes = Math.min(v.length, 256);
		float[] lane = new float[lanes];
		for (int l = 0; l < lanes; l++) {
			float a = v[l];
			for (int k = l + 256; k < v.length; k += 256) {
				a = op.apply(a, v[k]);
			}
			lane[l] = a;
		}
		for (int h = 128; h > 0; h >>= 1) {
			for (int j = 0; j < h; j++) {
				if (j + h < lanes) {
					lane[j] = op.apply(lane[j], lane[j + h]);
				}
			}
		}
		return lane[0];
	}

	/** Whole input: chunks of 4,096 reduced in that order, then the chunks' results. */
	static float reduceWhole(float[] v, BinaryOperator<Float> op, float identity) {
		if (v.length == 0) {
			return identity;
		}
		int chunks = (v.length + 4095) / 4096;
		float[] partial = new float[chunks];
		for (int c = 0; c < chunks; c++) {
			partial[c] = reduceRange(Arrays.copyOfRange(v, c * 4096, Math.min(v.length, (c + 1) * 4096)), op);
		}
		return reduceRange(partial, op);
	}

	@Test
	void aWholeSumHasTheBitsOfTheDocumentedOrderWhateverTheWorkers() {
		for (int threads : new int[] { 1, 2, 3 }) {
			try (GpuContext gpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(threads).poolSize(1).open()) {
				for (int n : new int[] { 0, 1, 2, 255, 256, 257, 4095, 4096, 4097, 8192 * 3 + 5, 300_001 }) {
					float[] x = ElementwiseKernelTests.random(n, n);
					float expected = reduceWhole(x, Float::sum, 0.0f);
					assertThat(run(gpu, SUM, n, x, 1)[0]).as("n = %d on %d workers", n, threads).isEqualTo(expected);
				}
			}
		}
	}

	@Test
	void theOrderIsNotASequentialSumSoTheTestCanTellThemApart() {
		float[] x = ElementwiseKernelTests.random(300_001, 7);
		float sequential = 0.0f;
		for (float v : x) {
			sequential += v;
		}
		assertThat(reduceWhole(x, Float::sum, 0.0f)).isNotEqualTo(sequential);
	}

	@Test
	void aNormAppliesItsPostMapOnce() {
		try (GpuContext gpu = cpu()) {
			float[] x = ElementwiseKernelTests.random(10_000, 3);
			float[] squares = new float[x.length];
			for (int i = 0; i < x.length; i++) {
				squares[i] = x[i] * x[i];
			}
			assertThat(run(gpu, NORM, x.length, x, 1)[0])
				.isEqualTo((float) Math.sqrt(reduceWhole(squares, Float::sum, 0.0f)));
			assertThat(run(gpu, NORM, 0, new float[0], 1)[0]).isEqualTo(0.0f);
		}
	}

	@Test
	void segmentsAreReducedEachInTheOrderWhateverTheLaunch() {
		try (GpuContext gpu = cpu()) {
			int length = 1000;
			int n = 37 * length + 123; // the last segment is shorter
			float[] x = ElementwiseKernelTests.random(n, 5);
			float[] expected = new float[38];
			for (int s = 0; s < 38; s++) {
				expected[s] = reduceRange(Arrays.copyOfRange(x, s * length, Math.min(n, (s + 1) * length)), Float::sum);
			}
			assertThat(runSegments(gpu, n, length, x, null)).containsExactly(expected);
			for (LaunchConfig config : new LaunchConfig[] { LaunchConfig.of(Dim3.of(1), Dim3.of(32)),
					LaunchConfig.of(Dim3.of(5), Dim3.of(1024)), LaunchConfig.of(Dim3.of(2, 2), Dim3.of(7, 3)) }) {
				assertThat(runSegments(gpu, n, length, x, config)).as("%s", config).containsExactly(expected);
			}
		}
	}

	@Test
	void longCountsAndDoubleMaximaWithPostMapsOfTheirOwn() {
		try (GpuContext gpu = cpu()) {
			GpuLauncher launcher = gpu.launcher();
			float[] x = ElementwiseKernelTests.random(9_999, 11);
			long count = 0;
			for (float v : x) {
				count += (v > 0.25f) ? 1 : 0;
			}
			long[] counted = new long[1];
			double[] values = new double[1000];
			for (int i = 0; i < values.length; i++) {
				values[i] = Math.sin(i);
			}
			double[] maxima = new double[4];
			try (StreamLease lease = gpu.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream());
					DeviceBuffer in = launcher.upload(HostArray.of(x));
					DeviceBuffer out = launcher.allocate(1, ElementType.LONG);
					DeviceBuffer d = launcher.upload(HostArray.of(values));
					DeviceBuffer m = launcher.allocate(4, ElementType.DOUBLE)) {
				COUNT_ABOVE.launch(launcher, x.length, 0.25f, in, out);
				out.download(HostArray.of(counted)).join();
				MEAN_OF_MAX.launch(launcher, values.length, 250, d, m);
				m.download(HostArray.of(maxima)).join();
			}
			assertThat(counted[0]).isEqualTo(count);
			for (int s = 0; s < 4; s++) {
				double max = Double.NEGATIVE_INFINITY;
				for (int i = 250 * s; i < 250 * (s + 1); i++) {
					max = Math.max(max, values[i]);
				}
				assertThat(maxima[s]).isEqualTo(max / 250);
			}
		}
	}

	@Test
	void theParametersAreNThenTheDeclaredOnesThenTheReductionsOwn() {
		assertThat(ExpressionKernel.of(SUM.source()).orElseThrow().parameters()).containsExactly("n", "x", "total",
				"gc_partials", "gc_phase");
		assertThat(ExpressionKernel.of(SEGMENT_SUM.source()).orElseThrow().parameters()).containsExactly("n",
				"segmentLength", "x", "sums");
		assertThat(ExpressionKernel.of(NORM.source()).orElseThrow().bitExact()).isTrue();
	}

	@Test
	void mistakesNameThePartTheyAreIn() {
		assertThatThrownBy(() -> ReductionKernel.named("r").in("float[] x").out("float[] r").map("x")
			.reduce("a + c").identity("0.0f").build())
			.isInstanceOf(KernelExpressionException.class)
			.hasMessageStartingWith("Kernel 'r', reduce, line 1, column 5: 'c' is not defined (the names here are: a, b)");
		assertThatThrownBy(() -> ReductionKernel.named("r").in("float[] x").out("int[] r").map("x")
			.reduce("a + b").identity("0.0f").build())
			.isInstanceOf(KernelExpressionException.class)
			.hasMessageContaining("postMap, line 1, column 1: the post-map (of a, a float, written to 'int[] r') must be an int, got a float");
		assertThatThrownBy(() -> ReductionKernel.named("r").in("float[] x").out("float[] r").map("x").reduce("a + b")
			.build()).isInstanceOf(IllegalStateException.class).hasMessageContaining("needs identity(...)");
		assertThatThrownBy(() -> ReductionKernel.named("r").in("float a, float[] x").out("float[] r").map("x")
			.reduce("a + b").identity("0.0f").build())
			.isInstanceOf(KernelExpressionException.class)
			.hasMessageContaining("in, line 1, column 7: 'a' is a name the kernel defines itself");
	}

	@Test
	void inACaptureALargeWholeSumIsRefusedForItsScratchAndItsTwoPhasesLaunchedByHandAreCaptured() {
		float[] x = new float[5000];
		for (int i = 0; i < x.length; i++) {
			x[i] = (i % 7) * 0.1f - 0.3f;
		}
		float[] result = new float[1];
		try (GpuContext gpu = cpu()) {
			GpuLauncher launcher = gpu.launcher();
			GpuGraphs graphs = GpuGraphs.of(gpu);
			try (StreamLease lease = gpu.streams().acquire();
					DeviceBuffer in = launcher.allocate(x.length, ElementType.FLOAT);
					DeviceBuffer out = launcher.allocate(1, ElementType.FLOAT);
					DeviceBuffer partials = launcher.allocate(2, ElementType.FLOAT)) {
				in.upload(HostArray.of(x));
				launcher.load(SUM.source()); // a load, too, is refused in a capture
				GpuStream stream = lease.stream();
				try (GraphCapture capture = graphs.beginCapture("sum", stream)) {
					assertThatThrownBy(() -> SUM.launch(launcher, x.length, in, out)).isInstanceOfSatisfying(
							GraphCaptureException.class, (ex) -> assertThat(ex.kind()).isEqualTo(GraphCaptureException.Kind.ALLOCATION));
				}
				try (GraphCapture capture = graphs.beginCapture("sum", stream)) {
					launcher.launch(SUM.source(), LaunchConfig.of(Dim3.of(2), Dim3.of(256)), x.length, in, out, partials, 1);
					launcher.launch(SUM.source(), LaunchConfig.of(Dim3.of(1), Dim3.of(256)), x.length, in, out, partials, 2);
					try (GpuGraph graph = capture.end()) {
						graph.launch(stream);
						stream.synchronize();
					}
				}
				out.download(HostArray.of(result)).join();
			}
		}
		assertThat(Float.floatToIntBits(result[0])).isEqualTo(Float.floatToIntBits(reduceWhole(x, Float::sum, 0.0f)));
	}

	private static GpuContext cpu() {
		return GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).open();
	}

	private static float[] run(GpuContext gpu, Reduction reduction, int n, float[] x, int results) {
		GpuLauncher launcher = gpu.launcher();
		float[] result = new float[results];
		try (StreamLease lease = gpu.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream());
				DeviceBuffer in = launcher.allocate(Math.max(1, x.length), ElementType.FLOAT);
				DeviceBuffer out = launcher.allocate(results, ElementType.FLOAT)) {
			if (x.length > 0) {
				in.upload(HostArray.of(x));
			}
			reduction.launch(launcher, n, in, out);
			out.download(HostArray.of(result)).join();
		}
		return result;
	}

	private static float[] runSegments(GpuContext gpu, int n, int length, float[] x, LaunchConfig config) {
		GpuLauncher launcher = gpu.launcher();
		int segments = (n + length - 1) / length;
		float[] result = new float[segments];
		try (StreamLease lease = gpu.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream());
				DeviceBuffer in = launcher.upload(HostArray.of(x));
				DeviceBuffer out = launcher.allocate(segments, ElementType.FLOAT)) {
			if (config == null) {
				SEGMENT_SUM.launch(launcher, n, length, in, out);
			}
			else {
				launcher.launch(SEGMENT_SUM.source(), config, n, length, in, out);
			}
			out.download(HostArray.of(result)).join();
		}
		return result;
	}

}
