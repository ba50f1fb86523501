package dev.gpucompute.sample.search;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.StreamLease;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.listener.GpuListener;

/**
 * Small search requests answered in a batch give the same bits as alone: every request of
 * a batch is compared with the store's answer to that request on its own, ids and the float bits of
 * every score. A batch is made deterministic by holding every stream of the pool while the requests
 * queue: the first request finds the batcher idle and runs on its own thread, waiting there for a
 * stream; the others queue behind it and form one batch per (collection, k) when the streams come
 * back.
 */
class BatchedSearchesTests {

	private static final int DIMENSION = 48;

	private static final int SIZE = 3000;

	@TempDir
	Path dir;

	private StoreFixture fixture;

	private final ExecutorService clients = Executors.newFixedThreadPool(16);

	/** Launches of {@code knn_fused}: one per store search of a batch (one group on the batch's stream, one piece). */
	private final AtomicInteger fusedLaunches = new AtomicInteger();

	@BeforeEach
	void open() {
		GpuListener launches = new GpuListener() {

			@Override
			public void kernelLaunched(String kernel, boolean success) {
				if (success && kernel.equals(KnnKernels.FUSED.name())) {
					BatchedSearchesTests.this.fusedLaunches.incrementAndGet();
				}
			}

		};
		this.fixture = new StoreFixture(this.dir, CollectionStore.Durability.DEFAULT, launches);
		Random random = new Random(21);
		for (String metric : List.of("cosine", "dot")) {
			this.fixture.store.create(metric, DIMENSION, Metric.fromJson(metric));
			float[] rows = new float[SIZE * DIMENSION];
			for (int i = 0; i < rows.length; i++) {
				rows[i] = (float) random.nextGaussian();
			}
			this.fixture.store.upsert(metric, IntStream.range(0, SIZE).mapToObj((i) -> "v" + i).toList(), rows);
		}
	}

	@AfterEach
	void close() {
		this.clients.shutdownNow();
		this.fixture.close();
	}

	private BatchedSearches batched(CollectionStore.Limits limits) {
		GpuBatcher<BatchedSearches.Request, List<List<Hit>>> batcher = GpuBatcher
			.builder(this.fixture.context, BatchedSearches.handler(this.fixture.store, limits))
			.name("search")
			.batchKey(BatchedSearches::batchKey)
			.maxBatchSize(64)
			.build();
		return new BatchedSearches(this.fixture.store, batcher, 8, limits);
	}

	private static CollectionStore.Limits limits(int maxQueries, int maxResults) {
		return new CollectionStore.Limits(4096, maxQueries, 256, maxResults);
	}

	private static float[] queries(Random random, int count) {
		float[] queries = new float[count * DIMENSION];
		for (int i = 0; i < queries.length; i++) {
			queries[i] = (float) random.nextGaussian();
		}
		return queries;
	}

	/** Holds every stream of the pool, so that the batcher's dispatcher waits for one. */
	private List<StreamLease> holdThePool() {
		List<StreamLease> leases = new ArrayList<>();
		for (int i = 0; i < this.fixture.context.streams().maxSize(); i++) {
			leases.add(this.fixture.context.streams().acquire());
		}
		return leases;
	}

	private static void awaitQueued(GpuBatcher<?, ?> batcher, int queued) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (batcher.queued() != queued) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError("queued " + batcher.queued() + ", expected " + queued);
			}
			Thread.sleep(1);
		}
	}

	/** Waits until a batch runs (the first request, on its own thread, waiting for a stream). */
	private static void awaitRunning(GpuBatcher<?, ?> batcher) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (batcher.stats().runningBatches() != 1) {
			if (System.nanoTime() > deadline) {
				throw new AssertionError("no batch runs: " + batcher.stats());
			}
			Thread.sleep(1);
		}
	}

	private static void assertSameBits(List<List<Hit>> batched, List<List<Hit>> alone, String what) {
		assertThat(batched).as(what).hasSameSizeAs(alone);
		for (int q = 0; q < alone.size(); q++) {
			assertThat(batched.get(q)).as("%s query %d", what, q).hasSameSizeAs(alone.get(q));
			for (int r = 0; r < alone.get(q).size(); r++) {
				Hit a = batched.get(q).get(r);
				Hit b = alone.get(q).get(r);
				assertThat(a.id()).as("%s query %d rank %d", what, q, r).isEqualTo(b.id());
				assertThat(Float.floatToRawIntBits(a.score())).as("%s query %d rank %d: %s vs %s", what, q, r, a.score(),
						b.score())
					.isEqualTo(Float.floatToRawIntBits(b.score()));
			}
		}
	}

	/**
	 * 12 single-query requests, one of 3 and one of 8 queries with k = 10, then one with k = 3, queued in
	 * that order while the pool is held: the first runs alone, the other k = 10 requests form one batch,
	 * the k = 3 one a batch of its own.
	 * @param storeSearches the store searches the batches must make, seen as {@code knn_fused} launches
	 */
	private void batchOfConcurrentRequestsGivesTheBitsOfEachAlone(String metric, CollectionStore.Limits limits,
			int storeSearches) throws Exception {
		try (BatchedSearches searches = batched(limits)) {
			Random random = new Random(metric.hashCode());
			List<float[]> requests = new ArrayList<>();
			for (int i = 0; i < 12; i++) {
				requests.add(queries(random, 1));
			}
			requests.add(queries(random, 3));
			requests.add(queries(random, 8));
			List<StreamLease> held = holdThePool();
			List<CompletableFuture<List<List<Hit>>>> answers = new ArrayList<>();
			int launchesBefore = this.fusedLaunches.get();
			try {
				for (float[] request : requests) {
					answers.add(CompletableFuture.supplyAsync(() -> searches.search(metric, request, 10), this.clients));
					// One at a time, so that the batch holds them in this order.
					if (answers.size() == 1) {
						awaitRunning(searches.batcher());
					}
					else {
						awaitQueued(searches.batcher(), answers.size() - 1);
					}
				}
				// A request with another k goes to a batch of its own.
				answers.add(CompletableFuture.supplyAsync(() -> searches.search(metric, requests.get(0), 3), this.clients));
				awaitQueued(searches.batcher(), requests.size());
			}
			finally {
				held.forEach(StreamLease::close);
			}
			List<List<List<Hit>>> batched = new ArrayList<>();
			for (CompletableFuture<List<List<Hit>>> answer : answers) {
				batched.add(answer.get(60, TimeUnit.SECONDS));
			}
			assertThat(this.fusedLaunches.get() - launchesBefore).as("store searches the batches made")
				.isEqualTo(storeSearches);
			for (int i = 0; i < requests.size(); i++) {
				assertSameBits(batched.get(i), this.fixture.store.search(metric, requests.get(i), 10), metric + " request " + i);
			}
			assertSameBits(batched.get(requests.size()), this.fixture.store.search(metric, requests.get(0), 3),
					metric + " request with k = 3");
			searches.close();
			BatcherStats stats = searches.batcher().stats();
			assertThat(stats.batches()).as("the first request alone, then one batch per (collection, k)").isEqualTo(3);
			assertThat(stats.dispatched()).isEqualTo(requests.size() + 1);
			assertThat(stats.failed()).isZero();
		}
	}

	@Test
	void aBatchAnswersEachRequestWithTheBitsItGetsAloneCosine() throws Exception {
		// One store search per batch: the first request, the 21 queries of the others, the k = 3 request.
		batchOfConcurrentRequestsGivesTheBitsOfEachAlone("cosine", limits(1024, 1_000_000), 3);
	}

	@Test
	void aBatchAnswersEachRequestWithTheBitsItGetsAloneDot() throws Exception {
		batchOfConcurrentRequestsGivesTheBitsOfEachAlone("dot", limits(1024, 1_000_000), 3);
	}

	@Test
	void aBatchBeyondTheStoresPerRequestLimitsIsSearchedInRunsThatFitThem() throws Exception {
		// At most 8 queries and 80 hits per store search: the batch of 11 single queries, 3 and 8 is searched in
		// three runs (8 singles; 3 singles and the 3; the 8), besides the first request and the k = 3 batch.
		batchOfConcurrentRequestsGivesTheBitsOfEachAlone("cosine", limits(8, 80), 5);
	}

	@Test
	void aBadRequestIsRefusedBeforeItJoinsABatch() {
		try (BatchedSearches searches = batched(limits(1024, 1_000_000))) {
			float[] nan = queries(new Random(1), 1);
			nan[5] = Float.NaN;
			assertThatThrownBy(() -> searches.search("cosine", nan, 10)).isInstanceOfSatisfying(ServiceProblem.class,
					(problem) -> assertThat(problem.type()).isEqualTo("non-finite-value"));
			assertThatThrownBy(() -> searches.search("cosine", queries(new Random(2), 1), SIZE + 1))
				.isInstanceOfSatisfying(ServiceProblem.class,
						(problem) -> assertThat(problem.type()).isEqualTo("k-out-of-range"));
			assertThatThrownBy(() -> searches.search("missing", queries(new Random(3), 1), 1))
				.isInstanceOfSatisfying(ServiceProblem.class,
						(problem) -> assertThat(problem.type()).isEqualTo("unknown-collection"));
			assertThat(searches.batcher().stats().submitted()).as("none of them joined the batcher").isZero();
		}
	}

	@Test
	void whenTheCollectionGoesAwayWhileRequestsWaitEachGetsItsOwnAnswer() throws Exception {
		try (BatchedSearches searches = batched(limits(1024, 1_000_000))) {
			List<StreamLease> held = holdThePool();
			List<CompletableFuture<List<List<Hit>>>> answers = new ArrayList<>();
			try {
				for (int i = 0; i < 3; i++) {
					float[] request = queries(new Random(i), 1);
					answers.add(CompletableFuture.supplyAsync(() -> searches.search("dot", request, 5), this.clients));
					if (i == 0) {
						awaitRunning(searches.batcher());
					}
				}
				awaitQueued(searches.batcher(), 2);
				this.fixture.store.delete("dot");
			}
			finally {
				held.forEach(StreamLease::close);
			}
			for (CompletableFuture<List<List<Hit>>> answer : answers) {
				assertThatThrownBy(() -> answer.get(60, TimeUnit.SECONDS)).cause()
					.isInstanceOfSatisfying(ServiceProblem.class,
							(problem) -> assertThat(problem.type()).isEqualTo("unknown-collection"));
			}
		}
	}

	@Test
	void largeRequestsAndBatchingOffSearchOnTheirOwn() {
		try (BatchedSearches searches = batched(limits(1024, 1_000_000))) {
			float[] nine = queries(new Random(9), 9);
			assertSameBits(searches.search("cosine", nine, 4), this.fixture.store.search("cosine", nine, 4), "9 queries");
			assertThat(searches.batcher().stats().submitted()).as("above max-request-queries (8)").isZero();
		}
		BatchedSearches off = new BatchedSearches(this.fixture.store, null, 8, limits(1024, 1_000_000));
		float[] one = queries(new Random(1), 1);
		assertSameBits(off.search("dot", one, 4), this.fixture.store.search("dot", one, 4), "batching off");
		off.close();
	}

}
