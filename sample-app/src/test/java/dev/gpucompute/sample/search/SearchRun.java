package dev.gpucompute.sample.search;

import java.util.HashMap;
import java.util.Map;

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
 * The search kernels on one backend, without the store: raw {@code knn_fused} launches and whole
 * searches through either path of {@link DeviceSearch}, on stored rows and queries the test gives
 * (non-finite values included, which the store would refuse). The CPU tests compare its answers with
 * a written-out reference; the GPU tests run the same calls on CUDA and on the CPU twins and compare
 * the bits ({@link TopKAssertions}, linear in the entries). Closing it closes the context.
 */
final class SearchRun implements AutoCloseable {

	final GpuContext context;

	private final GpuLauncher launcher;

	private final Map<String, Kernel> kernels = new HashMap<>();

	private final DeviceSearch search;

	/** Top k per query: {@code queries * k} scores and slots, query-major, best first. */
	record Result(float[] scores, int[] slots) {

		/** Entries {@code [from, to)}: one query's list, say, of a larger result. */
		Result slice(int from, int to) {
			return new Result(java.util.Arrays.copyOfRange(this.scores, from, to),
					java.util.Arrays.copyOfRange(this.slots, from, to));
		}

		/** The score of an entry no launch wrote: the NaN the host emulator also fills its outputs with. */
		static final float UNWRITTEN_SCORE = Float.intBitsToFloat(0x7fbadbad);

		/** The id of an entry no launch wrote (no kernel writes a negative id). */
		static final int UNWRITTEN_ID = -2;

		/**
		 * {@code count} entries that no launch wrote yet: a launch's output buffers start as these, so
		 * that an entry it leaves out shows as such (the markers of the host emulator's outputs).
		 */
		static Result unwritten(int count) {
			float[] scores = new float[count];
			int[] slots = new int[count];
			java.util.Arrays.fill(scores, UNWRITTEN_SCORE);
			java.util.Arrays.fill(slots, UNWRITTEN_ID);
			return new Result(scores, slots);
		}

		/** Whether no launch wrote any of these entries (see {@link #unwritten}). */
		boolean noneWritten() {
			for (int i = 0; i < this.slots.length; i++) {
				if (this.slots[i] != UNWRITTEN_ID || !Float.isNaN(this.scores[i])) {
					return false;
				}
			}
			return true;
		}

		/** {@code count} entries of the padding every kernel writes where a list has no more rows: (-inf, NO_ID). */
		static Result padding(int count) {
			float[] scores = new float[count];
			int[] slots = new int[count];
			java.util.Arrays.fill(scores, Float.NEGATIVE_INFINITY);
			java.util.Arrays.fill(slots, KnnKernels.NO_ID);
			return new Result(scores, slots);
		}

	}

	SearchRun(Backend backend, long scratchBytes) {
		this.context = GpuContext.builder().backend(backend).poolSize(2).maxSize(8).cpuThreads(2).open();
		try {
			this.launcher = this.context.launcher();
			for (KernelSource source : KnnKernels.withCudaFromClasspath()) {
				this.kernels.put(source.name(), this.launcher.load(source));
			}
			this.search = new DeviceSearch(new KnnLaunches(this.launcher, this::kernel), scratchBytes);
		}
		catch (RuntimeException ex) {
			this.context.close();
			throw ex;
		}
	}

	private Kernel kernel(KernelSource source) {
		return this.kernels.get(source.name());
	}

	DeviceSearch search() {
		return this.search;
	}

	/**
	 * One {@code knn_fused} launch over ranges of {@code rowsPerBlock} rows with the query groups CUDA
	 * uses (all queries up to 8, else 32): every range's top k per query, {@code (q * ranges + range) * k + r}.
	 */
	Result fusedLists(float[] vectors, int dim, float[] queries, int k, int rowsPerBlock) {
		int count = queries.length / dim;
		return fusedLists(vectors, dim, queries, k, rowsPerBlock, (count <= KnnGeometry.SCAN_MAX) ? count : KnnGeometry.BATCH_Q);
	}

	/** One {@code knn_fused} launch with {@code groupQueries} queries per block. */
	Result fusedLists(float[] vectors, int dim, float[] queries, int k, int rowsPerBlock, int groupQueries) {
		return fusedLists(vectors, dim, queries, k, rowsPerBlock, groupQueries,
				DeviceSearch.ceilDiv(vectors.length / dim, rowsPerBlock));
	}

	/**
	 * One {@code knn_fused} launch over {@code ranges} ranges (the engine's split has exactly the
	 * ranges that hold rows; more are padding only). Entries the launch does not write come back as
	 * {@link Result#unwritten}.
	 */
	Result fusedLists(float[] vectors, int dim, float[] queries, int k, int rowsPerBlock, int groupQueries, int ranges) {
		int n = vectors.length / dim;
		int count = queries.length / dim;
		int entries = count * ranges * Math.max(0, k);
		int shared = (this.context.device().backend() == Backend.CUDA)
				? (int) KnnGeometry.fusedSharedBytes(dim, groupQueries, k) : 0;
		Result result = Result.unwritten(entries);
		try (StreamLease lease = this.context.streams().acquire();
				DeviceBuffer rows = this.launcher.upload(HostArray.of(vectors));
				DeviceBuffer queryRows = this.launcher.upload(HostArray.of(queries));
				DeviceBuffer scores = this.launcher.upload(HostArray.of(result.scores()));
				DeviceBuffer ids = this.launcher.upload(HostArray.of(result.slots()))) {
			GpuStream stream = lease.stream();
			this.launcher.launch(stream, kernel(KnnKernels.FUSED),
					LaunchConfig.of(Dim3.of(DeviceSearch.ceilDiv(count, groupQueries), ranges), Dim3.of(KnnGeometry.FUSED_BLOCK))
						.withSharedMemory(shared),
					n, dim, count, k, rowsPerBlock, groupQueries, rows, queryRows, scores, ids);
			scores.download(HostArray.of(result.scores()), stream).join();
			ids.download(HostArray.of(result.slots()), stream).join();
		}
		return result;
	}

	/**
	 * One {@code knn_topk} launch, grid ({@code chunks}, {@code rows}), over {@code rows} rows of
	 * candidates: each chunk's best {@code min(k, CHUNK)}, {@code (row * chunks + chunk) * keep + r}.
	 * @param ids the candidates' ids, or null for their positions plus {@code idBase}
	 */
	Result topk(float[] scores, int[] ids, int rows, int k, int idBase, int chunks) {
		int m = scores.length / rows;
		int entries = rows * chunks * Math.min(k, KnnGeometry.CHUNK);
		Result result = new Result(new float[entries], new int[entries]);
		try (StreamLease lease = this.context.streams().acquire();
				DeviceBuffer in = this.launcher.upload(HostArray.of(scores));
				DeviceBuffer inIds = this.launcher.upload(HostArray.of((ids != null) ? ids : new int[1]));
				DeviceBuffer out = this.launcher.allocate(entries, ElementType.FLOAT);
				DeviceBuffer outIds = this.launcher.allocate(entries, ElementType.INT)) {
			GpuStream stream = lease.stream();
			this.launcher.launch(stream, kernel(KnnKernels.TOPK),
					LaunchConfig.of(Dim3.of(chunks, rows), Dim3.of(KnnGeometry.TOPK_BLOCK)), m, k, (ids != null) ? 1 : 0,
					idBase, in, inIds, out, outIds);
			out.download(HostArray.of(result.scores()), stream).join();
			outIds.download(HostArray.of(result.slots()), stream).join();
		}
		return result;
	}

	/** A whole search through {@link DeviceSearch#search} (the path its rule picks). */
	Result search(float[] vectors, int dim, float[] queries, int k) {
		return run(vectors, dim, queries, k, Path.CHOSEN, null);
	}

	/** A whole search through the fused path, whatever the rule would pick. */
	Result fused(float[] vectors, int dim, float[] queries, int k) {
		return run(vectors, dim, queries, k, Path.FUSED, null);
	}

	/**
	 * {@link #fused(float[], int, float[], int)}, adding to {@code pieces} the (first query, queries) of
	 * each piece the search delivered, in order: one per sub-batch.
	 */
	Result fused(float[] vectors, int dim, float[] queries, int k, java.util.List<java.util.List<Integer>> pieces) {
		return run(vectors, dim, queries, k, Path.FUSED, pieces);
	}

	/** A whole search through the general path (score matrix, knn_topk or the whole-row sort). */
	Result general(float[] vectors, int dim, float[] queries, int k) {
		return run(vectors, dim, queries, k, Path.GENERAL, null);
	}

	private enum Path {

		CHOSEN, FUSED, GENERAL

	}

	private Result run(float[] vectors, int dim, float[] queries, int k, Path path,
			java.util.List<java.util.List<Integer>> pieces) {
		int n = vectors.length / dim;
		int count = queries.length / dim;
		// Every piece (a sub-batch's, or on the general path a slab's) is merged by the total order.
		java.util.List<java.util.List<long[]>> candidates = new java.util.ArrayList<>();
		for (int q = 0; q < count; q++) {
			candidates.add(new java.util.ArrayList<>());
		}
		try (StreamLease lease = this.context.streams().acquire(); DeviceBuffer rows = this.launcher.upload(HostArray.of(vectors))) {
			GpuStream stream = lease.stream();
			java.util.List<Runnable> collect = new java.util.ArrayList<>();
			java.util.List<java.util.concurrent.CompletableFuture<Void>> downloads = new java.util.ArrayList<>();
			DeviceSearch.Results sink = (first, pieceQueries, pieceScores, pieceSlots) -> {
				if (pieces != null) {
					pieces.add(java.util.List.of(first, pieceQueries));
				}
				float[] s = new float[pieceQueries * k];
				int[] d = new int[pieceQueries * k];
				downloads.add(pieceScores.download(HostArray.of(s), stream));
				downloads.add(pieceSlots.download(HostArray.of(d), stream));
				collect.add(() -> {
					for (int i = 0; i < s.length; i++) {
						candidates.get(first + i / k).add(new long[] { Float.floatToRawIntBits(s[i]), d[i] });
					}
				});
			};
			switch (path) {
				case CHOSEN -> this.search.search(stream, rows, n, dim, queries, 0, count, k, sink);
				case FUSED -> this.search.searchFused(stream, rows, n, dim, queries, 0, count, k, sink);
				case GENERAL -> this.search.searchGeneral(stream, rows, n, dim, queries, 0, count, k, sink);
			}
			stream.synchronize();
			downloads.forEach(java.util.concurrent.CompletableFuture::join);
			collect.forEach(Runnable::run);
		}
		float[] scores = new float[count * k];
		int[] slots = new int[count * k];
		for (int q = 0; q < count; q++) {
			java.util.List<long[]> list = candidates.get(q);
			list.sort((a, b) -> KnnKernels.better(Float.intBitsToFloat((int) a[0]), (int) a[1],
					Float.intBitsToFloat((int) b[0]), (int) b[1]) ? -1 : (a[1] == b[1] ? 0 : 1));
			for (int r = 0; r < k; r++) {
				scores[q * k + r] = Float.intBitsToFloat((int) list.get(r)[0]);
				slots[q * k + r] = (int) list.get(r)[1];
			}
		}
		return new Result(scores, slots);
	}

	@Override
	public void close() {
		this.context.close();
	}

}
