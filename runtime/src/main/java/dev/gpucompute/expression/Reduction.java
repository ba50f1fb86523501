package dev.gpucompute.expression;

import java.util.Objects;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.InvalidKernelArgumentException;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.internal.expression.ReductionGenerator;
import org.jspecify.annotations.Nullable;

/**
 * A reduction kernel built by {@link ReductionKernel}: its {@link #source()} (one kernel, loaded like
 * any other) and the launch that runs it in the kernel's fixed order. Immutable and thread-safe.
 */
public final class Reduction {

	/** Threads per block of the launches: the lanes of the fixed order. */
	static final int THREADS = ReductionGenerator.LANES;

	private final KernelSource source;

	private final boolean segmented;

	private final @Nullable ElementType partials;

	Reduction(KernelSource source, boolean segmented, @Nullable ElementType partials) {
		this.source = source;
		this.segmented = segmented;
		this.partials = partials;
	}

	/**
	 * The kernel. Whole input: parameters {@code (int n, in..., result, partials, int phase)}, which
	 * {@link #launch} fills in; segmented: {@code (int n, int segmentLength, in..., result)}, which can
	 * also be launched directly with any launch configuration.
	 */
	public KernelSource source() {
		return this.source;
	}

	/** Whether it reduces fixed-size segments rather than the whole input. */
	public boolean segmented() {
		return this.segmented;
	}

	/**
	 * Enqueues the reduction on the calling thread's current stream.
	 *
	 * <p>In a graph capture: a segmented reduction, and a whole-input one of at most one chunk
	 * ({@code n <= 4096}), are one launch and are captured like any other. A larger whole-input one
	 * allocates and frees its scratch buffer of partial results here, which a capture refuses
	 * ({@code GraphCaptureException} of kind {@code ALLOCATION}; the capture is discarded). To capture
	 * one, load {@link #source()} and allocate the partials before the capture ({@code ceil(n / 4096)} elements of the type of the
	 * kernel's {@code gc_partials} parameter, one per chunk of 4,096) and launch {@link #source()}
	 * twice yourself, as this method does: {@code (n, in..., result, partials, 1)} on
	 * {@code ceil(n / 4096)} blocks, then
	 * {@code (n, in..., result, partials, 2)} on one block, both of 256 threads.
	 * @param launcher the launcher of the context to run on
	 * @param args {@code n} (an {@code Integer}), for a segmented reduction {@code segmentLength}, then
	 * the inputs and the result buffer, as declared
	 * @throws InvalidKernelArgumentException on a wrong number or type of arguments
	 */
	public void launch(GpuLauncher launcher, Object... args) {
		Objects.requireNonNull(launcher, "launcher");
		Objects.requireNonNull(args, "args");
		int declared = this.source.paramCount() - (this.segmented ? 0 : 2);
		if (args.length != declared) {
			throw new InvalidKernelArgumentException(this.source.name(), -1, "Reduction '" + this.source.name() + "' takes "
					+ declared + " arguments (" + String.join(", ", ExpressionKernel.of(this.source).orElseThrow().parameters()
						.subList(0, declared)) + "), got " + args.length);
		}
		int n = integer(args, 0, "n");
		if (this.segmented) {
			int length = integer(args, 1, "segmentLength");
			long segments = (n > 0 && length > 0) ? (n + (long) length - 1) / length : 0;
			launcher.launch(this.source, LaunchConfig.of(Dim3.of((int) segments), Dim3.of(THREADS)), args);
			return;
		}
		Object result = args[args.length - 1];
		if (n <= ReductionGenerator.CHUNK) {
			// One chunk or less: the second phase would combine one value, which changes nothing.
			launcher.launch(this.source, LaunchConfig.of(Dim3.of(1), Dim3.of(THREADS)), with(args, result, 0));
			return;
		}
		int chunks = (int) ((n + (long) ReductionGenerator.CHUNK - 1) / ReductionGenerator.CHUNK);
		// Only a segmented reduction (handled above) has no partials type.
		ElementType partials = Objects.requireNonNull(this.partials, "partials");
		try (DeviceBuffer partial = launcher.allocate(chunks, partials)) {
			launcher.launch(this.source, LaunchConfig.of(Dim3.of(chunks), Dim3.of(THREADS)), with(args, partial, 1));
			launcher.launch(this.source, LaunchConfig.of(Dim3.of(1), Dim3.of(THREADS)), with(args, partial, 2));
		} // freed on the stream, after the launches
	}

	private int integer(Object[] args, int index, String name) {
		if (!(args[index] instanceof Integer value)) {
			throw new InvalidKernelArgumentException(this.source.name(), index, "Argument " + index + " of reduction '"
					+ this.source.name() + "' (" + name + ") must be an Integer, got " + args[index]);
		}
		return value;
	}

	private static Object[] with(Object[] args, Object partials, int phase) {
		Object[] all = java.util.Arrays.copyOf(args, args.length + 2);
		all[args.length] = partials;
		all[args.length + 1] = phase;
		return all;
	}

	@Override
	public String toString() {
		return "Reduction[" + this.source.name() + (this.segmented ? ", segmented" : "") + "]";
	}

}
