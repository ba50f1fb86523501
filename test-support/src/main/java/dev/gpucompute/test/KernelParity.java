package dev.gpucompute.test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;
import org.opentest4j.AssertionFailedError;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.expression.ExpressionKernel;
import dev.gpucompute.expression.Reduction;

/**
 * Checks that a {@link KernelSource}'s CUDA body and CPU body compute the same thing: runs both on
 * the same generated inputs (CUDA device 0, the CPU backend) and compares every compared buffer within
 * a stated {@link Tolerance}.
 *
 * <pre>{@code
 * @Test
 * void saxpyBodiesAgree() {
 *     int n = 10_000;
 *     KernelParity.of(SAXPY)               // CUDA: y[i] = a * x[i] + y[i]; Java: y[i] = a * x[i] + y[i]
 *         .launch(LaunchConfig.linear(n, 256))
 *         .args(n, 2.5f, ParityBuffer.randomFloats(n), ParityBuffer.randomFloats(n).compared())
 *         // NVRTC contracts a * x + y into one FMA, Java rounds the product first: one multiply-add,
 *         // products up to 2.5 and sums up to 3.5 in magnitude
 *         .tolerance(Tolerance.fusedMultiplyAdds(1, 3.5))
 *         .check();
 * }
 * }</pre>
 *
 * <p>{@code Tolerance.ulps(1)} is not enough there: where {@code a * x} and {@code y} nearly cancel,
 * the product's rounding that the fused body skips is thousands of ulps of the small result (on an
 * H200, 4,658 of 100,003 elements differed by more than one ulp, by up to 65,536). For the same bits,
 * make both bodies round alike: compile the CUDA body with {@code -fmad=false}
 * ({@code SAXPY.compileOptions("-fmad=false")} for CUDA C source compiled at load time; give nvcc the
 * same option for prebuilt code), or write the
 * fused operation on both sides ({@code fmaf(a, x[i], y[i])} in CUDA, {@code Math.fma(a, x, y)} in
 * Java), and keep {@link Tolerance#exact()}.
 *
 * <p><b>Kernels written once</b> ({@code ElementwiseKernel}, {@code ReductionKernel}) need no CPU
 * body of yours and no tolerance: the expected agreement is the kernel's own
 * ({@link ExpressionKernel}), {@link Tolerance#exact()} when it uses only IEEE operations and exact
 * functions, {@link Tolerance#ulps(long)} of its stated bound when it calls a transcendental function
 * (which holds where that result is not amplified by what follows, such as a cancelling subtraction:
 * state your own then). A kernel compiled with fast math states no bound: give one.
 * {@link #of(Reduction)} checks a reduction through its own launch, with no launch configuration.
 *
 * <pre>{@code
 * KernelParity.of(SAXPY)                   // ElementwiseKernel...build(): exact, no CPU body written
 *     .launch(LaunchConfig.linear(n, 256))
 *     .args(n, 2.5f, ParityBuffer.randomFloats(n), ParityBuffer.randomFloats(n).compared())
 *     .check();
 * }</pre>
 *
 * <p>Arguments are given in the kernel's parameter order: scalars as {@code Integer}, {@code Long},
 * {@code Float} or {@code Double}, buffers as {@link ParityBuffer}s. Generated inputs come from a
 * seed ({@link #seed(long)}), so a failure is reproducible.
 *
 * <p>{@link #check()} needs a CUDA device: without one the test is <b>skipped</b> (aborted) with the
 * reason, or fails when the environment variable {@code GPU_REQUIRED=1} is set (a GPU machine's run,
 * where a skip would hide a broken set-up). Tag such tests {@code gpu} so that a GPU run selects them.
 * {@link #check(GpuContext, GpuContext)} compares on two contexts the caller opened (any backends), for
 * example to compare a rewritten CPU body with the old one. Not thread-safe while configured; a check
 * may be run again.
 */
public final class KernelParity {

	private final KernelSource source;

	/** A reduction checked through its own launch, or null. */
	private final @Nullable Reduction reduction;

	private @Nullable LaunchConfig config;

	private Object[] args = new Object[0];

	/** The tolerance stated with {@link #tolerance(Tolerance)}, or null for the kernel's own. */
	private @Nullable Tolerance tolerance;

	private long seed = 24;

	private KernelParity(KernelSource source, @Nullable Reduction reduction) {
		this.source = source;
		this.reduction = reduction;
	}

	/**
	 * A check of {@code source}'s two bodies; it needs both CUDA code and a CPU implementation (a
	 * kernel written once has both).
	 */
	public static KernelParity of(KernelSource source) {
		Objects.requireNonNull(source, "source");
		return new KernelParity(source, null);
	}

	/**
	 * A check of a reduction written once, launched as {@link Reduction#launch} does (no launch
	 * configuration to give): arguments {@code n}, for a segmented one {@code segmentLength}, the inputs
	 * and the result buffer.
	 */
	public static KernelParity of(Reduction reduction) {
		Objects.requireNonNull(reduction, "reduction");
		return new KernelParity(reduction.source(), reduction);
	}

	/** The launch configuration both bodies run with. */
	public KernelParity launch(LaunchConfig config) {
		this.config = Objects.requireNonNull(config, "config");
		return this;
	}

	/** The launch arguments, in parameter order: boxed scalars and {@link ParityBuffer}s. */
	public KernelParity args(Object... args) {
		Objects.requireNonNull(args, "args");
		this.args = args.clone();
		return this;
	}

	/**
	 * How far results may be apart; default {@link Tolerance#exact()}, or for a kernel written once the
	 * tolerance it states ({@link #expectedTolerance()}).
	 */
	public KernelParity tolerance(Tolerance tolerance) {
		this.tolerance = Objects.requireNonNull(tolerance, "tolerance");
		return this;
	}

	/** The seed of the generated inputs (default 24). */
	public KernelParity seed(long seed) {
		this.seed = seed;
		return this;
	}

	/**
	 * The tolerance the check applies: the one given, else for a kernel written once its own (exact, or
	 * the ulps of its transcendental functions), else {@link Tolerance#exact()}.
	 * @throws IllegalStateException for a kernel written once with fast math and no tolerance given
	 */
	public Tolerance expectedTolerance() {
		if (this.tolerance != null) {
			return this.tolerance;
		}
		ExpressionKernel kernel = ExpressionKernel.of(this.source).orElse(null);
		if (kernel == null || kernel.bitExact()) {
			return Tolerance.exact();
		}
		if (kernel.fastMath()) {
			throw new IllegalStateException("Kernel '" + this.source.name() + "' is compiled with fast math, which gives "
					+ "up bit parity and states no bound; give the tolerance you accept with tolerance(...)");
		}
		return Tolerance.ulps(kernel.ulps());
	}

	/**
	 * Runs the CUDA body on CUDA device 0 and the CPU body on the CPU backend, each in a context opened
	 * and closed here, and compares.
	 * @return the report, when every compared element agrees
	 * @throws AssertionFailedError when some disagree, with the report
	 * @throws org.opentest4j.TestAbortedException when no CUDA device can be used (unless
	 * {@code GPU_REQUIRED=1}, which makes that a failure)
	 * @throws IllegalArgumentException when the kernel lacks CUDA code or a CPU implementation
	 */
	public ParityReport check() {
		if (this.source.cudaForm() == null || this.source.cpu() == null) {
			throw new IllegalArgumentException("Kernel '" + this.source.name() + "' needs both CUDA code and a CPU "
					+ "implementation for a parity check; it has " + ((this.source.cudaForm() == null) ? "no CUDA code" : "")
					+ ((this.source.cudaForm() == null && this.source.cpu() == null) ? " and " : "")
					+ ((this.source.cpu() == null) ? "no CPU implementation" : ""));
		}
		String unavailable = RequiresCuda.Condition.unavailableReason();
		if (unavailable != null) {
			Assumptions.abort(unavailable + "; the CUDA body of kernel '" + this.source.name() + "' cannot run");
		}
		try (GpuContext gpu = GpuContext.builder().backend(Backend.CUDA).poolSize(1).open();
				GpuContext cpu = GpuContext.builder().backend(Backend.CPU).poolSize(1).open()) {
			return check(gpu, cpu);
		}
	}

	/**
	 * Runs the kernel on {@code first} and on {@code second} (contexts the caller owns and closes) and
	 * compares.
	 * @throws AssertionFailedError when some compared elements disagree, with the report
	 */
	public ParityReport check(GpuContext first, GpuContext second) {
		Objects.requireNonNull(first, "first");
		Objects.requireNonNull(second, "second");
		if (this.config == null && this.reduction == null) {
			throw new IllegalStateException("No launch configuration: call launch(LaunchConfig) first");
		}
		Tolerance applied = expectedTolerance();
		List<@Nullable ByteBuffer> inputs = inputs();
		List<ByteBuffer> a = run(first, inputs);
		List<ByteBuffer> b = run(second, inputs);
		List<ParityReport.Comparison> comparisons = new ArrayList<>();
		int compared = 0;
		for (int i = 0; i < this.args.length; i++) {
			if (this.args[i] instanceof ParityBuffer buffer && buffer.isCompared()) {
				comparisons.add(compare(i, buffer, a.get(compared), b.get(compared), applied));
				compared++;
			}
		}
		ParityReport report = new ParityReport(this.source.name(), describe(first), describe(second), applied,
				List.copyOf(comparisons));
		if (!report.agrees()) {
			throw new AssertionFailedError("The two bodies disagree. " + report);
		}
		return report;
	}

	private static String describe(GpuContext context) {
		return context.backend() + " device " + context.device().ordinal();
	}

	/** The initial contents of every buffer argument, drawn once so that both sides get the same bytes. */
	private List<@Nullable ByteBuffer> inputs() {
		SplittableRandom random = new SplittableRandom(this.seed);
		List<@Nullable ByteBuffer> inputs = new ArrayList<>();
		for (int i = 0; i < this.args.length; i++) {
			Object arg = this.args[i];
			if (arg == null) {
				throw new IllegalArgumentException("Argument " + i + " of kernel '" + this.source.name() + "' is null");
			}
			inputs.add((arg instanceof ParityBuffer buffer) ? buffer.contents(random.split()) : null);
		}
		return inputs;
	}

	/** Launches on a pooled stream of {@code context} and returns the compared buffers' contents, in order. */
	private List<ByteBuffer> run(GpuContext context, List<@Nullable ByteBuffer> inputs) {
		GpuLauncher launcher = context.launcher();
		Kernel kernel = launcher.load(this.source);
		List<DeviceBuffer> buffers = new ArrayList<>();
		List<ByteBuffer> results = new ArrayList<>();
		try (StreamLease lease = context.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream())) {
			Object[] launchArgs = new Object[this.args.length];
			for (int i = 0; i < this.args.length; i++) {
				if (this.args[i] instanceof ParityBuffer) {
					DeviceBuffer buffer = launcher.upload(HostArray.of(inputs.get(i).duplicate()));
					buffers.add(buffer);
					launchArgs[i] = buffer;
				}
				else {
					launchArgs[i] = this.args[i];
				}
			}
			if (this.reduction != null) {
				this.reduction.launch(launcher, launchArgs);
			}
			else {
				// check() refuses a kernel launched without a configuration
				launcher.launch(kernel, Objects.requireNonNull(this.config), launchArgs);
			}
			for (int i = 0; i < this.args.length; i++) {
				if (this.args[i] instanceof ParityBuffer buffer && buffer.isCompared()) {
					ByteBuffer result = ByteBuffer.allocate(inputs.get(i).capacity()).order(ByteOrder.nativeOrder());
					((DeviceBuffer) launchArgs[i]).download(HostArray.of(result)).join();
					results.add(result);
				}
			}
			lease.stream().synchronize();
		}
		finally {
			for (DeviceBuffer buffer : buffers) {
				buffer.close();
			}
		}
		return results;
	}

	private ParityReport.Comparison compare(int argument, ParityBuffer buffer, ByteBuffer a, ByteBuffer b,
			Tolerance tolerance) {
		ElementType type = buffer.type();
		int count = buffer.count();
		int mismatches = 0;
		int first = -1;
		String firstValues = null;
		long maxUlps = 0;
		double maxAbsolute = 0;
		for (int i = 0; i < count; i++) {
			Element element = element(type, a, b, i, tolerance);
			maxUlps = Math.max(maxUlps, element.ulps());
			maxAbsolute = Math.max(maxAbsolute, element.absoluteDifference());
			if (!element.agree()) {
				if (mismatches == 0) {
					first = i;
					firstValues = valueText(type, element.first()) + " vs " + valueText(type, element.second());
				}
				mismatches++;
			}
		}
		return new ParityReport.Comparison(argument, type, count, mismatches, first, firstValues, maxUlps, maxAbsolute);
	}

	/** Element {@code i} of both sides, compared. */
	private static Element element(ElementType type, ByteBuffer a, ByteBuffer b, int i, Tolerance tolerance) {
		return switch (type) {
			case FLOAT -> {
				float p = a.getFloat(4 * i);
				float q = b.getFloat(4 * i);
				yield new Element(p, q, tolerance.accepts(p, q),
						(Float.isNaN(p) || Float.isNaN(q)) ? 0 : Tolerance.ulpsApart(p, q));
			}
			case DOUBLE -> {
				double p = a.getDouble(8 * i);
				double q = b.getDouble(8 * i);
				yield new Element(p, q, tolerance.accepts(p, q),
						(Double.isNaN(p) || Double.isNaN(q)) ? 0 : Tolerance.ulpsApart(p, q));
			}
			case INT -> integers(a.getInt(4 * i), b.getInt(4 * i), tolerance);
			case LONG -> integers(a.getLong(8 * i), b.getLong(8 * i), tolerance);
			case BYTE -> integers(a.get(i), b.get(i), tolerance);
		};
	}

	private static Element integers(long p, long q, Tolerance tolerance) {
		return new Element(p, q, tolerance.accepts(p, q), 0);
	}

	/** Both sides' values of one element (as doubles, for the report), whether they agree, and their distance in ulps. */
	private record Element(double first, double second, boolean agree, long ulps) {

		/** NaN against a number is infinitely far; NaN against NaN not at all. */
		double absoluteDifference() {
			if (Double.isNaN(this.first) || Double.isNaN(this.second)) {
				return (Double.isNaN(this.first) == Double.isNaN(this.second)) ? 0 : Double.POSITIVE_INFINITY;
			}
			return Math.abs(this.first - this.second);
		}

	}

	private static String valueText(ElementType type, double value) {
		return switch (type) {
			case FLOAT -> Float.toString((float) value) + " (0x" + Integer.toHexString(Float.floatToRawIntBits((float) value)) + ")";
			case DOUBLE -> value + " (0x" + Long.toHexString(Double.doubleToRawLongBits(value)) + ")";
			default -> Long.toString((long) value);
		};
	}

}
