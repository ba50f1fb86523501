package dev.gpucompute.expression;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;

/**
 * Reductions' generated CUDA on the emulator against their generated Java on the CPU backend: the
 * same bits for float and double sums (where the order decides the bits), maxima over NaN and signed
 * zeros, and wrapping int sums, for block sizes and grids other than the launch's own, since the order
 * is the kernel's.
 */
@ExtendWith(ExpressionEmulator.Available.class)
class ReductionParityEmulatedTests {

	static final Reduction FLOAT_SUM = ReductionKernel.named("fsum").in("float[] x").out("float[] total").map("x")
		.reduce("a + b").identity("-0.0f").build();

	static final Reduction DOUBLE_NORM = ReductionKernel.named("dnorm").in("double[] x").out("double[] total")
		.map("x * x").reduce("a + b").identity("0.0").postMap("sqrt(a)").build();

	static final Reduction FLOAT_MAX = ReductionKernel.named("fmax_segments").in("float[] x").out("float[] peak")
		.map("x").reduce("fmax(a, b)").identity("-1.0f / 0.0f").segmented().build();

	static final Reduction INT_SUM = ReductionKernel.named("isum_segments").in("int[] k").out("int[] total")
		.map("k * 3").reduce("a + b").identity("0").postMap("a / 2").segmented().build();

	/** Inputs named like the generated code's loop variables would be, if it did not keep to its own prefix. */
	static final Reduction SHADOWS = ReductionKernel.named("shadows").in("int k, int h, float[] s, float[] l")
		.out("float[] c").map("s * k + l[i] * h").reduce("a + b").identity("0.0f").segmented().build();

	private static GpuContext cpu;

	private static ExpressionEmulator emulator;

	@BeforeAll
	static void open() {
		cpu = GpuContext.builder().backend(Backend.CPU).cpuThreads(2).poolSize(1).open();
		emulator = ExpressionEmulator.buildOrSkip(List.of(FLOAT_SUM.source(), DOUBLE_NORM.source(), FLOAT_MAX.source(),
				INT_SUM.source(), SHADOWS.source()));
	}

	@AfterAll
	static void close() {
		cpu.close();
	}

	@Test
	void wholeFloatSumsHaveTheSameBitsForAnyGridAndBlock() {
		List<float[]> in = Adversarial.floats(20_000, 21);
		float[] mixed = in.get(1); // special values included: infinities and NaN make some prefixes NaN
		float[] finite = ElementwiseKernelTests.random(20_000, 22);
		for (float[] x : List.of(finite, mixed, java.util.Arrays.copyOf(finite, 4096), java.util.Arrays.copyOf(finite, 77))) {
			ByteBuffer expected = onCpu(FLOAT_SUM, ElementType.FLOAT, 1, x.length, BothSides.of(x));
			for (int[] launch : new int[][] { { -1, 256 }, { 2, 64 }, { 3, 32 }, { 1, 1024 } }) {
				ByteBuffer emulated = whole(FLOAT_SUM, ElementType.FLOAT, x.length, BothSides.of(x), launch[0], launch[1]);
				assertThat(Float.floatToIntBits(emulated.getFloat(0))).as("n = %d, grid %d, block %d", x.length, launch[0],
						launch[1]).isEqualTo(Float.floatToIntBits(expected.getFloat(0)));
			}
		}
	}

	@Test
	void wholeDoubleNormsHaveTheSameBits() {
		double[] x = Adversarial.doubles(30_000, 23).get(0);
		double[] finite = new double[x.length];
		for (int i = 0; i < x.length; i++) {
			finite[i] = Double.isFinite(x[i]) && Math.abs(x[i]) < 1e150 ? x[i] : i * 0.5;
		}
		ByteBuffer expected = onCpu(DOUBLE_NORM, ElementType.DOUBLE, 1, finite.length, BothSides.of(finite));
		ByteBuffer emulated = whole(DOUBLE_NORM, ElementType.DOUBLE, finite.length, BothSides.of(finite), -1, 256);
		assertThat(emulated.getDouble(0)).isEqualTo(expected.getDouble(0));
	}

	@Test
	void segmentedMaximaAndIntSumsHaveTheSameBitsForAnyGridAndBlock() {
		List<float[]> in = Adversarial.floats(5_000, 24);
		float[] x = in.get(0);
		int length = 300;
		int segments = (x.length + length - 1) / length;
		int[] k = Adversarial.ints(4_000, 25).get(0);
		int kSegments = (k.length + 97 - 1) / 97;
		ByteBuffer expectedMax = onCpu(FLOAT_MAX, ElementType.FLOAT, segments, x.length, length, BothSides.of(x));
		ByteBuffer expectedSums = onCpu(INT_SUM, ElementType.INT, kSegments, k.length, 97, BothSides.of(k));
		for (int[] launch : new int[][] { { segments, 256 }, { 3, 100 }, { 1, 32 } }) {
			List<ByteBuffer> max = BothSides.onEmulator(emulator, FLOAT_MAX.source(), launch[0], launch[1], x.length, length,
					BothSides.of(x), BothSides.zeros(ElementType.FLOAT, segments));
			BothSides.compare(FLOAT_MAX.source(), List.of("n", "segmentLength", "x", "peak"),
					new Object[] { x.length, length, BothSides.of(x), BothSides.zeros(ElementType.FLOAT, segments) },
					List.of(max.get(0), expectedMax), max, Map.of());
			List<ByteBuffer> sums = BothSides.onEmulator(emulator, INT_SUM.source(), Math.min(launch[0], kSegments), launch[1],
					k.length, 97, BothSides.of(k), BothSides.zeros(ElementType.INT, kSegments));
			assertThat(sums.get(1)).as("int sums, grid %d, block %d", launch[0], launch[1]).isEqualTo(expectedSums);
		}
	}

	@Test
	void namesOfTheApplicationNeverMeetTheGeneratedCodesOwn() {
		float[] s = ElementwiseKernelTests.random(1000, 26);
		float[] l = ElementwiseKernelTests.random(1000, 27);
		ByteBuffer expected = onCpu(SHADOWS, ElementType.FLOAT, 10, 1000, 100, 3, 5, BothSides.of(s), BothSides.of(l));
		List<ByteBuffer> emulated = BothSides.onEmulator(emulator, SHADOWS.source(), 10, 256, 1000, 100, 3, 5, BothSides.of(s),
				BothSides.of(l), BothSides.zeros(ElementType.FLOAT, 10));
		assertThat(emulated.get(2)).isEqualTo(expected);
		assertThat((double) expected.getFloat(0)).isCloseTo(sum(s, l, 0, 100), org.assertj.core.data.Offset.offset(1e-3));
	}

	private static double sum(float[] s, float[] l, int from, int to) {
		double sum = 0;
		for (int i = from; i < to; i++) {
			sum += s[i] * 3 + l[i] * 5;
		}
		return sum;
	}

	/** The result buffer after {@link Reduction#launch} on the CPU backend. */
	private static ByteBuffer onCpu(Reduction reduction, ElementType type, int results, Object... args) {
		GpuLauncher launcher = cpu.launcher();
		Object[] launchArgs = java.util.Arrays.copyOf(args, args.length + 1);
		ByteBuffer result = ByteBuffer.allocate(type.bytes() * results).order(java.nio.ByteOrder.nativeOrder());
		try (StreamLease lease = cpu.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream());
				DeviceBuffer out = launcher.allocate(results, type)) {
			java.util.List<DeviceBuffer> inputs = new java.util.ArrayList<>();
			try {
				for (int k = 0; k < args.length; k++) {
					if (args[k] instanceof BothSides.Buffer buffer) {
						DeviceBuffer device = launcher.upload(HostArray.of(buffer.bytes().duplicate().clear()));
						inputs.add(device);
						launchArgs[k] = device;
					}
				}
				launchArgs[args.length] = out;
				reduction.launch(launcher, launchArgs);
				out.download(HostArray.of(result)).join();
			}
			finally {
				inputs.forEach(DeviceBuffer::close);
			}
		}
		return result;
	}

	/**
	 * A whole-input reduction on the emulator as {@link Reduction#launch} runs it on a device: phase 1
	 * over the chunks on {@code grid} blocks ({@code -1}: one per chunk) of {@code block} threads, then
	 * phase 2 on one block; phase 0 for one chunk or less.
	 */
	private static ByteBuffer whole(Reduction reduction, ElementType type, int n, BothSides.Buffer x, int grid, int block) {
		BothSides.Buffer result = BothSides.zeros(type, 1);
		if (n <= 4096) {
			return BothSides.onEmulator(emulator, reduction.source(), 1, block, n, x, result, result, 0).get(1);
		}
		int chunks = (n + 4095) / 4096;
		BothSides.Buffer partials = BothSides.zeros(type, chunks);
		List<ByteBuffer> first = BothSides.onEmulator(emulator, reduction.source(), (grid < 0) ? chunks : grid, block, n, x,
				result, partials, 1);
		BothSides.Buffer filled = new BothSides.Buffer(type, first.get(2));
		return BothSides.onEmulator(emulator, reduction.source(), 1, block, n, x, result, filled, 2).get(1);
	}

}
