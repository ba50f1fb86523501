package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.Dim3;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.settings.KernelTiming;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;

/**
 * Not a test: a benchmark main (run by the GPU check's {@code kernels} step) that times
 * {@code knn_merge} against the {@code knn_topk} passes it replaced on the fused path, over the
 * lists {@code knn_fused} writes for a search of 1, 16 and 100 queries on this device's split of a
 * shard of 1M rows (264 ranges for up to 32 queries on a 132-SM device), k = 10 and 32. Device time
 * of every launch from the runtime's timing events (what {@code gpu.kernel.duration} reports), after
 * a warm-up; the two alternate in blocks so that both see the same device. Per search: the mean
 * time of a {@code knn_merge} launch (and its median), and the mean sum of the passes (one or two, of
 * different sizes). Prints one line per shape.
 *
 * <pre>
 * java -cp ... dev.gpucompute.sample.search.MergeTimes [cpu|cuda] [repetitions, default 200]
 * </pre>
 */
public final class MergeTimes {

	private static final int ROWS = 1_000_000;

	private static final int BLOCK = 25;

	private MergeTimes() {
	}

	public static void main(String[] args) throws InterruptedException {
		Backend backend = (args.length > 0 && args[0].equalsIgnoreCase("cpu")) ? Backend.CPU : Backend.CUDA;
		// Whole blocks of the alternation: the count asked for, rounded up.
		int asked = (args.length > 1) ? Integer.parseInt(args[1]) : 200;
		int repetitions = (asked + BLOCK - 1) / BLOCK * BLOCK;
		Times times = new Times();
		try (GpuContext context = GpuContext.builder()
			.backend(backend)
			.poolSize(1)
			.kernelTiming(KernelTiming.ALL)
			.listener(times)
			.open()) {
			GpuLauncher launcher = context.launcher();
			Kernel merge = null;
			Kernel topk = null;
			for (KernelSource source : KnnKernels.withCudaFromClasspath()) {
				if (source.name().equals(KnnKernels.MERGE.name())) {
					merge = launcher.load(source);
				}
				else if (source.name().equals(KnnKernels.TOPK.name())) {
					topk = launcher.load(source);
				}
			}
			System.out.printf(Locale.ROOT, "knn_merge vs the knn_topk passes it replaced, device time per search "
					+ "(%d of each, after a warm-up), on %s (%d multiprocessors), lists of a %,d-row shard:%n",
					repetitions, context.device().name(), context.device().multiprocessors(), ROWS);
			Random random = new Random(61);
			for (int queries : new int[] { 1, 16, 100 }) {
				int runs = DeviceSearch.split(context.device(), ROWS, queries).ranges();
				for (int k : new int[] { 10, 32 }) {
					MergeRun.Lists lists = MergeRun.lists(random, queries, runs, k, false);
					System.out.println(measure(context, merge, topk, times, lists, repetitions));
				}
			}
		}
	}

	private static String measure(GpuContext context, Kernel merge, Kernel topk, Times times, MergeRun.Lists lists,
			int repetitions) throws InterruptedException {
		GpuLauncher launcher = context.launcher();
		int k = lists.k();
		int count = lists.queries();
		int runs = lists.runs();
		List<int[]> passes = new ArrayList<>(); // per pass: candidates per query, chunks
		for (int m = runs * k;;) {
			int chunks = DeviceSearch.ceilDiv(m, KnnGeometry.CHUNK);
			passes.add(new int[] { m, chunks });
			if (chunks == 1) {
				break;
			}
			m = chunks * k;
		}
		long first = (long) count * passes.get(0)[1] * k;
		try (StreamLease lease = context.streams().acquire();
				DeviceBuffer scores = launcher.upload(HostArray.of(lists.scores()));
				DeviceBuffer ids = launcher.upload(HostArray.of(lists.ids()));
				DeviceBuffer outScores = launcher.allocate(Math.max(first, (long) count * k), ElementType.FLOAT);
				DeviceBuffer outIds = launcher.allocate(Math.max(first, (long) count * k), ElementType.INT);
				DeviceBuffer midScores = launcher.allocate(first, ElementType.FLOAT);
				DeviceBuffer midIds = launcher.allocate(first, ElementType.INT)) {
			GpuStream stream = lease.stream();
			Runnable mergeOnce = () -> launcher.launch(stream, merge,
					LaunchConfig.of(Dim3.of(count), Dim3.of(KnnGeometry.mergeThreads(runs))), runs, k, scores, ids, outScores,
					outIds);
			Runnable passesOnce = () -> {
				// As DeviceSearch.chunkedTopK: the lists, then the survivors, pass after pass.
				DeviceBuffer[] in = { scores, ids };
				for (int p = 0; p < passes.size(); p++) {
					DeviceBuffer[] out = (p % 2 == 0) ? new DeviceBuffer[] { midScores, midIds }
							: new DeviceBuffer[] { outScores, outIds };
					launcher.launch(stream, topk, LaunchConfig.of(Dim3.of(passes.get(p)[1], count), Dim3.of(KnnGeometry.TOPK_BLOCK)),
							passes.get(p)[0], k, 1, 0, in[0], in[1], out[0], out[1]);
					in = out;
				}
			};
			// Warm-up, untimed by the record (its timings are drained before recording starts).
			for (int i = 0; i < BLOCK; i++) {
				mergeOnce.run();
				passesOnce.run();
			}
			stream.synchronize();
			times.settle(0);
			times.clear();
			times.recording = true;
			for (int done = 0; done < repetitions; done += BLOCK) {
				for (int i = 0; i < BLOCK; i++) {
					mergeOnce.run();
				}
				for (int i = 0; i < BLOCK; i++) {
					passesOnce.run();
				}
				stream.synchronize();
			}
			times.settle(repetitions * (1 + passes.size()));
			times.recording = false;
			long[] merges = times.of(KnnKernels.MERGE.name());
			long[] topks = times.of(KnnKernels.TOPK.name());
			// Per search: a merge is one launch; the passes' launches differ in size, so their sum per search.
			double mergeMs = sum(merges) / 1e6 / Math.max(1, merges.length);
			double passesMs = sum(topks) / 1e6 / Math.max(1, topks.length / passes.size());
			return String.format(Locale.ROOT,
					"  %3d queries, k = %2d, %4d lists: knn_merge %.4f ms (median %.4f; %d threads per block); knn_topk, "
							+ "%d pass%s: %.4f ms; merge / passes %.2fx (%d and %d timed launches)",
					count, k, runs, mergeMs, median(merges) / 1e6, KnnGeometry.mergeThreads(runs), passes.size(),
					(passes.size() == 1) ? "" : "es", passesMs, mergeMs / passesMs, merges.length, topks.length);
		}
	}

	private static double median(long[] values) {
		if (values.length == 0) {
			return Double.NaN;
		}
		long[] sorted = values.clone();
		Arrays.sort(sorted);
		return sorted[sorted.length / 2];
	}

	private static double sum(long[] values) {
		return Arrays.stream(values).sum();
	}

	/** Device times of the timed launches, by kernel, while recording. */
	private static final class Times implements GpuListener {

		volatile boolean recording;

		private final Map<String, ConcurrentLinkedQueue<Long>> nanos = new ConcurrentHashMap<>();

		@Override
		public void kernelTimed(String kernel, long time) {
			if (this.recording) {
				this.nanos.computeIfAbsent(kernel, (name) -> new ConcurrentLinkedQueue<>()).add(time);
			}
		}

		long[] of(String kernel) {
			return this.nanos.getOrDefault(kernel, new ConcurrentLinkedQueue<>()).stream().mapToLong(Long::longValue).toArray();
		}

		void clear() {
			this.nanos.clear();
		}

		/** Waits until {@code expected} timings arrived (the runtime reads them every 20 ms), at most 5 s. */
		void settle(int expected) throws InterruptedException {
			long deadline = System.nanoTime() + 5_000_000_000L;
			do {
				Thread.sleep(50);
			}
			while (this.nanos.values().stream().mapToInt(ConcurrentLinkedQueue::size).sum() < expected
					&& System.nanoTime() < deadline);
		}

	}

}
