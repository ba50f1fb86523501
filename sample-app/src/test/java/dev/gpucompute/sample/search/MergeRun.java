package dev.gpucompute.sample.search;

import java.util.Arrays;
import java.util.Random;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;


/**
 * {@code knn_merge} on one backend, without the rest of the search: raw launches over lists the test
 * writes ({@link #lists}), the same candidates through {@code knn_topk}'s passes as the fused path ran
 * them before (for comparison); results are compared with {@link TopKAssertions}. Closing it closes
 * the context.
 */
final class MergeRun implements AutoCloseable {

	final GpuContext context;

	private final GpuLauncher launcher;

	private final Kernel merge;

	private final Kernel topk;

	/** Sorted lists of k per query and run, {@code (q * runs + r) * k + i}: {@code knn_fused}'s layout. */
	record Lists(int queries, int runs, int k, float[] scores, int[] ids) {

		String shape() {
			return this.queries + " queries x " + this.runs + " lists of k=" + this.k;
		}

	}

	MergeRun(Backend backend) {
		this.context = GpuContext.builder().backend(backend).poolSize(2).maxSize(4).cpuThreads(2).open();
		try {
			this.launcher = this.context.launcher();
			Kernel merge = null;
			Kernel topk = null;
			for (KernelSource source : KnnKernels.withCudaFromClasspath()) {
				if (source.name().equals(KnnKernels.MERGE.name())) {
					merge = this.launcher.load(source);
				}
				else if (source.name().equals(KnnKernels.TOPK.name())) {
					topk = this.launcher.load(source);
				}
			}
			this.merge = merge;
			this.topk = topk;
		}
		catch (RuntimeException ex) {
			this.context.close();
			throw ex;
		}
	}

	/** One {@code knn_merge} launch with the engine's block ({@link KnnGeometry#mergeThreads}). */
	SearchRun.Result merge(Lists lists) {
		return merge(lists, KnnGeometry.mergeThreads(lists.runs()));
	}

	/**
	 * One {@code knn_merge} launch, grid (queries), {@code threads} per block: {@code queries * k}
	 * entries; those the launch does not write come back as {@link SearchRun.Result#unwritten}.
	 */
	SearchRun.Result merge(Lists lists, int threads) {
		int entries = lists.queries() * lists.k();
		SearchRun.Result result = SearchRun.Result.unwritten(entries);
		try (StreamLease lease = this.context.streams().acquire();
				DeviceBuffer scores = this.launcher.upload(HostArray.of(lists.scores()));
				DeviceBuffer ids = this.launcher.upload(HostArray.of(lists.ids()));
				DeviceBuffer outScores = this.launcher.upload(HostArray.of(result.scores()));
				DeviceBuffer outIds = this.launcher.upload(HostArray.of(result.slots()))) {
			GpuStream stream = lease.stream();
			this.launcher.launch(stream, this.merge, LaunchConfig.of(Dim3.of(lists.queries()), Dim3.of(threads)),
					lists.runs(), lists.k(), scores, ids, outScores, outIds);
			outScores.download(HostArray.of(result.scores()), stream).join();
			outIds.download(HostArray.of(result.slots()), stream).join();
		}
		return result;
	}

	/**
	 * The same candidates through {@code knn_topk}'s passes, as {@code DeviceSearch} merged the fused
	 * path's lists before {@code knn_merge}: chunks of {@link KnnGeometry#CHUNK}, pass after pass, until one
	 * chunk per query is left.
	 */
	SearchRun.Result topkPasses(Lists lists) {
		int k = lists.k();
		float[] scores = lists.scores();
		int[] ids = lists.ids();
		int m = lists.runs() * k;
		while (true) {
			int chunks = DeviceSearch.ceilDiv(m, KnnGeometry.CHUNK);
			int entries = lists.queries() * chunks * k;
			float[] outScores = new float[entries];
			int[] outIds = new int[entries];
			try (StreamLease lease = this.context.streams().acquire();
					DeviceBuffer in = this.launcher.upload(HostArray.of(scores));
					DeviceBuffer inIds = this.launcher.upload(HostArray.of(ids));
					DeviceBuffer out = this.launcher.allocate(entries, ElementType.FLOAT);
					DeviceBuffer outIdBuffer = this.launcher.allocate(entries, ElementType.INT)) {
				GpuStream stream = lease.stream();
				this.launcher.launch(stream, this.topk,
						LaunchConfig.of(Dim3.of(chunks, lists.queries()), Dim3.of(KnnGeometry.TOPK_BLOCK)), m, k, 1, 0, in,
						inIds, out, outIdBuffer);
				out.download(HostArray.of(outScores), stream).join();
				outIdBuffer.download(HostArray.of(outIds), stream).join();
			}
			if (chunks == 1) {
				return new SearchRun.Result(outScores, outIds);
			}
			scores = outScores;
			ids = outIds;
			m = chunks * k;
		}
	}

	@Override
	public void close() {
		this.context.close();
	}

	// ---- test data and comparison ---------------------------------------------------------------

	/**
	 * What {@code knn_fused} could write for {@code runs} ranges of rows, in a shuffled order: per query
	 * and list, up to k distinct rows of its range (fewer now and then, down to none, as for a range
	 * shorter than k: the rest padding), sorted by the total order. Scores come from a few values when
	 * {@code ties} (equal scores across lists, ordered by row), include -inf for real rows (a NaN score)
	 * and both zeros; never NaN.
	 */
	static Lists lists(Random random, int queries, int runs, int k, boolean ties) {
		int rowsPerRun = Math.max(k, 64);
		float[] scores = new float[queries * runs * k];
		int[] ids = new int[queries * runs * k];
		float[] values = { 1.5f, 0.25f, 0f, -0f, -1f, Float.NEGATIVE_INFINITY, 3e38f };
		for (int q = 0; q < queries; q++) {
			// The lists' rows in no particular order of the lists, so that equal scores are ordered by
			// row, not by list (knn_fused's are in order, which would hide a merge that ignored the rows).
			int[] block = shuffled(random, runs);
			for (int r = 0; r < runs; r++) {
				int run = block[r];
				int dice = random.nextInt(8);
				int length = (dice == 0) ? 0 : (dice == 1) ? random.nextInt(k + 1) : k;
				int[] rows = random.ints(0, rowsPerRun).distinct().limit(length).map((row) -> run * rowsPerRun + row).toArray();
				Integer[] order = new Integer[length];
				float[] s = new float[length];
				for (int i = 0; i < length; i++) {
					order[i] = i;
					s[i] = ties ? values[random.nextInt(values.length)]
							: (random.nextInt(50) == 0) ? Float.NEGATIVE_INFINITY : (float) random.nextGaussian();
				}
				Arrays.sort(order, (a, b) -> KnnKernels.better(s[a], rows[a], s[b], rows[b]) ? -1
						: KnnKernels.better(s[b], rows[b], s[a], rows[a]) ? 1 : 0);
				int base = (q * runs + r) * k;
				for (int i = 0; i < k; i++) {
					boolean real = i < length;
					scores[base + i] = real ? s[order[i]] : Float.NEGATIVE_INFINITY;
					ids[base + i] = real ? rows[order[i]] : KnnKernels.NO_ID;
				}
			}
		}
		return new Lists(queries, runs, k, scores, ids);
	}

	private static int[] shuffled(Random random, int count) {
		int[] values = java.util.stream.IntStream.range(0, count).toArray();
		for (int i = count - 1; i > 0; i--) {
			int j = random.nextInt(i + 1);
			int v = values[i];
			values[i] = values[j];
			values[j] = v;
		}
		return values;
	}

	/** Every query's top k of all its lists' entries, sorted by the total order: written out, independently of the kernels. */
	static SearchRun.Result sortedTopK(Lists lists) {
		int k = lists.k();
		int m = lists.runs() * k;
		float[] scores = new float[lists.queries() * k];
		int[] ids = new int[lists.queries() * k];
		for (int q = 0; q < lists.queries(); q++) {
			int base = q * m;
			Integer[] order = new Integer[m];
			for (int i = 0; i < m; i++) {
				order[i] = base + i;
			}
			float[] s = lists.scores();
			int[] d = lists.ids();
			Arrays.sort(order, (a, b) -> KnnKernels.better(s[a], d[a], s[b], d[b]) ? -1
					: KnnKernels.better(s[b], d[b], s[a], d[a]) ? 1 : 0);
			for (int r = 0; r < k; r++) {
				scores[q * k + r] = s[order[r]];
				ids[q * k + r] = d[order[r]];
			}
		}
		return new SearchRun.Result(scores, ids);
	}


}
