package dev.gpucompute.sample.search;

import java.util.function.Function;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;

/**
 * The search kernels of one device, loaded, each launched by a method whose parameters are the
 * kernel's CUDA parameters in order, typed ({@code int}, {@code long} for {@code long long},
 * {@link DeviceBuffer} for a pointer): a call with an argument missing, swapped or of the wrong width
 * does not compile, where the launcher's {@code Object...} would refuse it only when it runs. The
 * runtime's launcher takes untyped arguments only; these methods pass them on unchanged, so a launch
 * costs what the launcher's does. A test compares each method's parameters with its kernel's
 * declaration in {@link KnnKernels}.
 *
 * <p>Every launch is enqueued on the stream it is given; the configuration is the caller's (its
 * geometry is in {@link KnnGeometry}, the shapes the kernels define in {@link KnnLaunchRules}).
 * Thread-safe: immutable.
 */
final class KnnLaunches {

	private final GpuLauncher launcher;

	private final Kernel score;

	private final Kernel topk;

	private final Kernel sortInit;

	private final Kernel bitonicStep;

	private final Kernel fused;

	private final Kernel merge;

	private final Kernel scatter;

	/**
	 * @param launcher the launcher of the device the kernels are loaded on
	 * @param kernels each kernel of {@link KnnKernels} as loaded on that device
	 */
	KnnLaunches(GpuLauncher launcher, Function<KernelSource, Kernel> kernels) {
		this.launcher = launcher;
		this.score = kernels.apply(KnnKernels.SCORE);
		this.topk = kernels.apply(KnnKernels.TOPK);
		this.sortInit = kernels.apply(KnnKernels.SORT_INIT);
		this.bitonicStep = kernels.apply(KnnKernels.BITONIC_STEP);
		this.fused = kernels.apply(KnnKernels.FUSED);
		this.merge = kernels.apply(KnnKernels.MERGE);
		this.scatter = kernels.apply(KnnKernels.SCATTER);
	}

	/** The launcher the kernels launch through. */
	GpuLauncher launcher() {
		return this.launcher;
	}

	/** {@value KnnKernels#SCORE_SIGNATURE} */
	void score(GpuStream stream, LaunchConfig config, int m, int dim, int count, long first, DeviceBuffer vectors,
			DeviceBuffer queries, DeviceBuffer scores) {
		this.launcher.launch(stream, this.score, config, m, dim, count, first, vectors, queries, scores);
	}

	/** {@value KnnKernels#TOPK_SIGNATURE} */
	void topk(GpuStream stream, LaunchConfig config, int m, int k, int useIds, int idBase, DeviceBuffer inScores,
			DeviceBuffer inIds, DeviceBuffer outScores, DeviceBuffer outIds) {
		this.launcher.launch(stream, this.topk, config, m, k, useIds, idBase, inScores, inIds, outScores, outIds);
	}

	/** {@value KnnKernels#SORT_INIT_SIGNATURE} */
	void sortInit(GpuStream stream, LaunchConfig config, int n, int p, int idBase, DeviceBuffer scores, DeviceBuffer s,
			DeviceBuffer ids) {
		this.launcher.launch(stream, this.sortInit, config, n, p, idBase, scores, s, ids);
	}

	/** {@value KnnKernels#BITONIC_STEP_SIGNATURE} */
	void bitonicStep(GpuStream stream, LaunchConfig config, int p, int size, int stride, DeviceBuffer s,
			DeviceBuffer ids) {
		this.launcher.launch(stream, this.bitonicStep, config, p, size, stride, s, ids);
	}

	/** {@value KnnKernels#SCATTER_SIGNATURE} */
	void scatter(GpuStream stream, LaunchConfig config, long total, int dim, DeviceBuffer slots, DeviceBuffer rows,
			DeviceBuffer vectors) {
		this.launcher.launch(stream, this.scatter, config, total, dim, slots, rows, vectors);
	}

	/** {@value KnnKernels#FUSED_SIGNATURE} */
	void fused(GpuStream stream, LaunchConfig config, int n, int dim, int count, int k, int rowsPerBlock,
			int groupQueries, DeviceBuffer vectors, DeviceBuffer queries, DeviceBuffer outScores, DeviceBuffer outIds) {
		this.launcher.launch(stream, this.fused, config, n, dim, count, k, rowsPerBlock, groupQueries, vectors, queries,
				outScores, outIds);
	}

	/** {@value KnnKernels#MERGE_SIGNATURE} */
	void merge(GpuStream stream, LaunchConfig config, int runs, int k, DeviceBuffer inScores, DeviceBuffer inIds,
			DeviceBuffer outScores, DeviceBuffer outIds) {
		this.launcher.launch(stream, this.merge, config, runs, k, inScores, inIds, outScores, outIds);
	}

}
