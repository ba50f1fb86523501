package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

import dev.gpucompute.batch.Batch;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;

/**
 * Searches, with small requests joined into batches: a request of at most
 * {@code maxRequestQueries} queries waits in a {@link GpuBatcher} keyed by (collection, k), and one
 * search of the store answers every request of a batch; a larger request searches on its own, as
 * before. Real traffic is one query per request, and one search reads the whole collection whatever
 * its number of queries (a tiled matrix product), so a batch of n single-query requests costs little
 * more than one of them.
 *
 * <p>The answers are the same as alone, bit for bit: every query of a batch is ranked by the same
 * kernels with the same arithmetic, independently of the others ({@code BatchedSearchesTests}).
 * A request is checked before it joins a batch (finite values, norm, {@code k} within the
 * collection, the per-request limits), so one bad request does not fail the others; should a batch
 * still be refused as a client error (the collection was deleted or replaced meanwhile), each of its
 * requests is searched alone and gets its own answer.
 *
 * <p>Thread-safe. Owns the batcher it is given and closes it; the store belongs to the caller.
 */
public final class BatchedSearches implements AutoCloseable {

	/**
	 * One request as it waits in the batcher.
	 *
	 * @param collection the collection's name
	 * @param k hits per query
	 * @param queries the request's queries, row-major, of the collection's dimension
	 * @param rows how many queries that is
	 */
	public record Request(String collection, int k, float[] queries, int rows) {
	}

	private final CollectionStore store;

	private final @Nullable GpuBatcher<Request, List<List<Hit>>> batcher;

	private final int maxRequestQueries;

	private final CollectionStore.Limits limits;

	/**
	 * @param store the store that runs the searches
	 * @param batcher the batcher small requests join (built with {@link #batchKey} and {@link #handler}),
	 * or {@code null} to search every request on its own
	 * @param maxRequestQueries most queries of a request that joins a batch
	 * @param limits the store's per-request limits
	 */
	public BatchedSearches(CollectionStore store, @Nullable GpuBatcher<Request, List<List<Hit>>> batcher,
			int maxRequestQueries, CollectionStore.Limits limits) {
		this.store = store;
		this.batcher = batcher;
		this.maxRequestQueries = maxRequestQueries;
		this.limits = limits;
	}

	/** The batch key: requests of one collection with one {@code k} share a batch. */
	public static Object batchKey(Request request) {
		return List.of(request.collection(), request.k());
	}

	/**
	 * The batches' work: one store search per run of requests that fits the per-request limits
	 * (usually the whole batch), split back into each request's answer.
	 */
	public static BatchHandler<Request, List<List<Hit>>> handler(CollectionStore store, CollectionStore.Limits limits) {
		return (batch) -> searchBatch(store, limits, batch);
	}

	/**
	 * The {@code k} nearest vectors of each query, best first: through a batch when the request is
	 * small, else on this thread.
	 * @throws ServiceProblem as {@link CollectionStore#search} does; 503 when the batcher's queue is
	 * full ({@link dev.gpucompute.batch.BatchQueueFullException}) or the request waited past its timeout
	 * ({@link dev.gpucompute.batch.BatchTimeoutException})
	 */
	public List<List<Hit>> search(String name, float[] queries, int k) {
		if (this.batcher == null) {
			return this.store.search(name, queries, k);
		}
		return search(this.store.get(name), queries, k);
	}

	/**
	 * {@link #search(String, float[], int)} of the collection {@code info} describes, for a caller that
	 * has just looked it up ({@link CollectionStore#get}) and checked the request against it: the
	 * lookup takes the collection's read lock, which waits behind a write. The checks before a batch use
	 * {@code info}; the search itself is by name, so a collection deleted meanwhile is still answered
	 * with the store's 404.
	 */
	public List<List<Hit>> search(CollectionInfo info, float[] queries, int k) {
		String name = info.name();
		if (this.batcher == null) {
			return this.store.search(name, queries, k);
		}
		int dim = info.dimension();
		int count = (queries.length % dim == 0) ? queries.length / dim : -1;
		if (count < 1 || count > this.maxRequestQueries || count > this.limits.maxQueries() || k < 1 || k > info.size()
				|| (long) count * k > this.limits.maxResults()) {
			// Large or refused: the store searches it, or answers with the reason, exactly as before.
			return this.store.search(name, queries, k);
		}
		Vectors.check("vectors", queries, dim, info.metric());
		// The request thread waits anyway: when the batcher is idle the search runs right here, no
		// hand-off to a batcher thread and back; otherwise it joins the next batch.
		return this.batcher.call(new Request(name, k, queries, count));
	}

	/** The batcher small requests join, or {@code null} when batching is off. */
	public @Nullable GpuBatcher<Request, List<List<Hit>>> batcher() {
		return this.batcher;
	}

	@Override
	public void close() {
		if (this.batcher != null) {
			this.batcher.close();
		}
	}

	static List<List<List<Hit>>> searchBatch(CollectionStore store, CollectionStore.Limits limits, Batch<Request> batch) {
		List<Request> requests = batch.items();
		List<List<List<Hit>>> answers = new ArrayList<>(java.util.Collections.nCopies(requests.size(), null));
		String name = requests.get(0).collection();
		int k = requests.get(0).k();
		int from = 0;
		while (from < requests.size()) {
			// The longest run that one request of the store could hold; each request alone fits.
			int to = from;
			long rows = 0;
			long values = 0;
			while (to < requests.size()) {
				long next = rows + requests.get(to).rows();
				if (to > from && (next > limits.maxQueries() || next * k > limits.maxResults())) {
					break;
				}
				rows = next;
				values += requests.get(to).queries().length;
				to++;
			}
			float[] queries = (to - from == 1) ? requests.get(from).queries() : join(requests, from, to, values);
			try {
				List<List<Hit>> hits = store.search(name, queries, k);
				int first = 0;
				for (int i = from; i < to; i++) {
					int count = requests.get(i).rows();
					answers.set(i, List.copyOf(hits.subList(first, first + count)));
					first += count;
				}
			}
			catch (ServiceProblem problem) {
				if (problem.status() >= 500) {
					failAll(batch, from, to, problem);
				}
				else {
					// Refused as a client error although each request was checked: the collection changed
					// meanwhile. Each request gets its own answer, as alone.
					for (int i = from; i < to; i++) {
						try {
							answers.set(i, store.search(name, requests.get(i).queries(), k));
						}
						catch (RuntimeException alone) {
							batch.fail(i, alone);
						}
					}
				}
			}
			catch (RuntimeException ex) {
				failAll(batch, from, to, ex);
			}
			from = to;
		}
		return answers;
	}

	/** The queries of requests {@code from} to {@code to}, back to back ({@code values} floats). */
	private static float[] join(List<Request> requests, int from, int to, long values) {
		float[] queries = new float[Math.toIntExact(values)];
		int offset = 0;
		for (int i = from; i < to; i++) {
			float[] own = requests.get(i).queries();
			System.arraycopy(own, 0, queries, offset, own.length);
			offset += own.length;
		}
		return queries;
	}

	private static void failAll(Batch<Request> batch, int from, int to, RuntimeException failure) {
		for (int i = from; i < to; i++) {
			batch.fail(i, failure);
		}
	}

	@Override
	public String toString() {
		return "BatchedSearches[" + ((this.batcher != null) ? this.batcher.name() + ", up to " + this.maxRequestQueries
				+ " queries per request" : "off") + "]";
	}

}
