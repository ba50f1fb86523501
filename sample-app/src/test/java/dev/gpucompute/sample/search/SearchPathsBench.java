package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamLease;

/**
 * Not a test: a benchmark main (run by {@code benchmarks/search-paths.sh}) that times the two device
 * paths of {@link DeviceSearch} on one backend, in the same JVM on the same data, alternating: the
 * general path (knn_score + knn_topk: the search of main before the fused kernel) and the fused path
 * ({@code knn_fused} + knn_topk). Prints queries per second of each, per round, and the ratio of the
 * medians, for 1 and 100 queries per search at k = 10, and the process's CPU time per query (on the
 * CPU backend the work itself: steadier than the rates on a machine other work also uses). Device
 * time only: no HTTP, no JSON.
 *
 * <pre>
 * java -cp ... dev.gpucompute.sample.search.SearchPathsBench [cpu|cuda] [seconds per figure] [quick]
 * </pre>
 */
public final class SearchPathsBench {

	private SearchPathsBench() {
	}

	public static void main(String[] args) {
		Backend backend = (args.length > 0 && args[0].equalsIgnoreCase("cuda")) ? Backend.CUDA : Backend.CPU;
		double seconds = (args.length > 1) ? Double.parseDouble(args[1]) : 3;
		boolean quick = args.length > 2 && args[2].equals("quick");
		int[][] sets = quick ? new int[][] { { 200_000, 128 }, { 20_000, 384 } }
				: new int[][] { { 1_000_000, 128 }, { 100_000, 384 } };
		int rounds = 3;
		try (GpuContext context = GpuContext.builder()
			.backend(backend)
			.poolSize(2)
			.cpuThreads(Runtime.getRuntime().availableProcessors())
			.open()) {
			GpuLauncher launcher = context.launcher();
			java.util.Map<String, dev.gpucompute.Kernel> kernels = new java.util.HashMap<>();
			for (KernelSource source : KnnKernels.withCudaFromClasspath()) {
				kernels.put(source.name(), launcher.load(source));
			}
			DeviceSearch search = new DeviceSearch(new KnnLaunches(launcher, (source) -> kernels.get(source.name())),
					64L << 20);
			System.out.println("device: " + context.device().name() + "; " + CpuScoring.scoringPath() + "; "
					+ seconds + " s per figure, " + rounds + " rounds, k = 10");
			for (int[] set : sets) {
				int n = set[0];
				int dim = set[1];
				float[] rows = unitRows(new Random(1000 + dim), n, dim);
				float[] queries = unitRows(new Random(2000 + dim), 1000, dim);
				try (DeviceBuffer vectors = launcher.upload(HostArray.of(rows))) {
					for (int count : new int[] { 1, 100 }) {
						double[][] general = new double[2][rounds];
						double[][] fused = new double[2][rounds];
						for (int round = 0; round < rounds; round++) {
							double[] g = rate(context, search, vectors, n, dim, queries, count, false, seconds);
							double[] f = rate(context, search, vectors, n, dim, queries, count, true, seconds);
							for (int i = 0; i < 2; i++) {
								general[i][round] = g[i];
								fused[i][round] = f[i];
							}
						}
						System.out.printf("%d x %d, %3d queries per search: general %s q/s, fused %s q/s, fused/general %.2fx;"
								+ " CPU ms per query: general %.2f, fused %.2f, general/fused %.2fx%n", n, dim, count,
								Arrays.toString(round(general[0])), Arrays.toString(round(fused[0])),
								median(fused[0]) / median(general[0]), median(general[1]), median(fused[1]),
								median(general[1]) / median(fused[1]));
					}
				}
			}
		}
	}

	/**
	 * Queries per second of one path and the process's CPU milliseconds per query, searching until
	 * {@code seconds} passed (after one warm-up search).
	 */
	private static double[] rate(GpuContext context, DeviceSearch search, DeviceBuffer vectors, int n, int dim,
			float[] queries, int count, boolean fused, double seconds) {
		int batches = queries.length / dim / count;
		once(context, search, vectors, n, dim, queries, 0, count, fused);
		com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
			.getOperatingSystemMXBean();
		long cpu = os.getProcessCpuTime();
		long start = System.nanoTime();
		int calls = 0;
		while (System.nanoTime() - start < seconds * 1e9 || calls < 3) {
			once(context, search, vectors, n, dim, queries, (calls % batches) * count, count, fused);
			calls++;
		}
		double wall = (System.nanoTime() - start) / 1e9;
		double cpuMs = (os.getProcessCpuTime() - cpu) / 1e6;
		return new double[] { calls * count / wall, cpuMs / (calls * count) };
	}

	private static void once(GpuContext context, DeviceSearch search, DeviceBuffer vectors, int n, int dim,
			float[] queries, int from, int count, boolean fused) {
		try (StreamLease lease = context.streams().acquire()) {
			GpuStream stream = lease.stream();
			List<CompletableFuture<Void>> downloads = new ArrayList<>();
			DeviceSearch.Results sink = (first, pieceQueries, scores, slots) -> {
				downloads.add(scores.download(HostArray.of(new float[pieceQueries * 10]), stream));
				downloads.add(slots.download(HostArray.of(new int[pieceQueries * 10]), stream));
			};
			if (fused) {
				search.searchFused(stream, vectors, n, dim, queries, from, from + count, 10, sink);
			}
			else {
				search.searchGeneral(stream, vectors, n, dim, queries, from, from + count, 10, sink);
			}
			stream.synchronize();
			downloads.forEach(CompletableFuture::join);
		}
	}

	private static float[] unitRows(Random random, int count, int dim) {
		float[] rows = new float[count * dim];
		for (int r = 0; r < count; r++) {
			double norm = 0;
			for (int j = 0; j < dim; j++) {
				float v = (float) random.nextGaussian();
				rows[r * dim + j] = v;
				norm += v * v;
			}
			float scale = (float) (1 / Math.sqrt(norm));
			for (int j = 0; j < dim; j++) {
				rows[r * dim + j] *= scale;
			}
		}
		return rows;
	}

	private static double median(double[] values) {
		double[] sorted = values.clone();
		Arrays.sort(sorted);
		return sorted[sorted.length / 2];
	}

	private static long[] round(double[] values) {
		return Arrays.stream(values).mapToLong(Math::round).toArray();
	}

}
