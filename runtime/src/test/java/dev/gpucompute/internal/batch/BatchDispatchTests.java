package dev.gpucompute.internal.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.BatchTimeoutException;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.internal.batch.BatchQueue.Item;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.KernelTiming;

/**
 * The dispatch of batches ({@link BatchDispatch}) on a real CPU-backend context with one pooled
 * stream: an inline batch runs on the caller's thread and ends its reservation; a batch that gets no
 * stream fails its items with the pool's exception without running the handler; the dispatch threads
 * take batches of one key, oldest first, fail what expired and drop what its caller completed, and
 * end once the batcher is shut down and its queue is empty. No clock: the batcher holds for no delay.
 */
class BatchDispatchTests {

	private static final int MAX_BATCH = 2;

	private final GpuContext context = GpuContext.builder()
		.backend(Backend.CPU)
		.cpuThreads(1)
		.poolSize(1)
		.maxSize(1)
		.kernelTiming(KernelTiming.OFF)
		.utilizationSampling(Duration.ZERO, Duration.ZERO)
		.open();

	private final ScheduledThreadPoolExecutor housekeeping = new ScheduledThreadPoolExecutor(1);

	private final BatcherState<String, String> state = new BatcherState<>(new BatchPacing(MAX_BATCH, 0));

	private final BatchDeadlines<String, String> deadlines = new BatchDeadlines<>(this.state, "b", this.housekeeping,
			Runnable::run);

	private final BatchAdmission<String, String> admission = new BatchAdmission<>(this.state, this.deadlines,
			new ContextState(7, null, null), "b", (item) -> item.substring(0, 1), MAX_BATCH, 100, 1);

	/** The batches the handler got, and the threads it ran on. */
	private final List<List<String>> batches = Collections.synchronizedList(new ArrayList<>());

	private final List<Thread> handlerThreads = Collections.synchronizedList(new ArrayList<>());

	/** What the listener heard: "dispatched n" per batch, "waited" per item. */
	private final List<String> heard = Collections.synchronizedList(new ArrayList<>());

	private final BatchHandler<String, String> upperCase = (batch) -> {
		this.batches.add(List.copyOf(batch.items()));
		this.handlerThreads.add(Thread.currentThread());
		return batch.items().stream().map(String::toUpperCase).toList();
	};

	private final GpuListener listener = new GpuListener() {

		@Override
		public void batchDispatched(String batcher, int size) {
			BatchDispatchTests.this.heard.add(batcher + " dispatched " + size);
		}

		@Override
		public void batchItemWaited(String batcher, long waitNanos) {
			BatchDispatchTests.this.heard.add(batcher + " waited");
		}

	};

	@AfterEach
	void close() {
		this.housekeeping.shutdownNow();
		this.context.close();
	}

	private BatchDispatch<String, String> dispatch(Duration acquireTimeout) {
		return new BatchDispatch<>(this.state, this.deadlines, new BatchRunner<>("b", this.upperCase, this.context.launcher()),
				this.context.streams(), this.listener, "b", 7, MAX_BATCH, 1, StreamPriority.NORMAL, acquireTimeout);
	}

	private BatcherStats stats() {
		this.state.lock.lock();
		try {
			return this.state.counters.snapshot("b", this.state.queue.size(), this.state.inFlight, MAX_BATCH, 100);
		}
		finally {
			this.state.lock.unlock();
		}
	}

	@Test
	void anInlineBatchRunsOnTheCallersThreadAndEndsItsReservation() throws Exception {
		Item<String, String> own = this.admission.newItem("x", BatchQueue.NONE);
		List<Item<String, String>> inline = this.admission.runInlineOrQueue(own);

		dispatch(Duration.ofSeconds(30)).runInline(inline, own.enqueuedAt);

		assertThat(own.future.getNow(null)).isEqualTo("X");
		assertThat(this.handlerThreads).containsExactly(Thread.currentThread());
		assertThat(this.heard).containsExactly("b dispatched 1", "b waited");
		assertThat(this.state.inFlight).isZero();
		assertThat(this.state.busy).isZero();
		assertThat(this.state.running).isEmpty();
		assertThat(stats()).extracting(BatcherStats::succeeded, BatcherStats::failed).containsExactly(1L, 0L);
		assertThat(this.context.streams().stats().active()).as("the batch's stream went back").isZero();
	}

	@Test
	void aBatchWithoutAStreamFailsItsItemsWithThePoolsExceptionAndNeverRunsTheHandler() {
		Item<String, String> own = this.admission.newItem("x", BatchQueue.NONE);
		List<Item<String, String>> inline = this.admission.runInlineOrQueue(own);

		try (StreamLease held = this.context.streams().acquire()) {
			dispatch(Duration.ZERO).runInline(inline, own.enqueuedAt);
		}

		assertThatThrownBy(own.future::join).cause().isInstanceOf(PoolExhaustedException.class);
		assertThat(this.batches).isEmpty();
		assertThat(this.heard).as("still a batch to the listener").containsExactly("b dispatched 1", "b waited");
		assertThat(this.state.inFlight).isZero();
		assertThat(this.state.running).isEmpty();
		assertThat(stats()).extracting(BatcherStats::succeeded, BatcherStats::failed).containsExactly(0L, 1L);
	}

	@Test
	void dispatchThreadsTakeBatchesOfOneKeyOldestFirstAndEndOnceShutDownAndEmpty() throws Exception {
		long now = System.nanoTime();
		Item<String, String> expired = new Item<>("a-expired", "a", now - 2, now - 1, this.deadlines::cancelled);
		Item<String, String> done = new Item<>("a-done", "a", now - 1, BatchQueue.NONE, this.deadlines::cancelled);
		this.state.queue.add(expired);
		this.state.queue.add(done);
		done.future.complete("completed by its caller");
		List<CompletableFuture<String>> futures = new ArrayList<>();
		for (String item : List.of("a0", "a1", "a2", "b0", "a3")) {
			futures.add(this.admission.submit(item, BatchQueue.NONE));
		}
		this.state.lock.lock();
		try {
			this.state.shutDown();
		}
		finally {
			this.state.lock.unlock();
		}

		dispatch(Duration.ofSeconds(30)).start();

		assertThat(CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS)).isNull();
		assertThat(futures).extracting(CompletableFuture::join).containsExactly("A0", "A1", "A2", "B0", "A3");
		assertThat(this.batches).containsExactly(List.of("a0", "a1"), List.of("a2", "a3"), List.of("b0"));
		assertThat(this.handlerThreads).extracting(Thread::getName).containsOnly("gpu-7-batch-b-1");
		assertThatThrownBy(expired.future::join).cause().isInstanceOf(BatchTimeoutException.class);
		assertThat(done.future.join()).isEqualTo("completed by its caller");

		Thread dispatcher = this.handlerThreads.get(0);
		dispatcher.join(TimeUnit.SECONDS.toMillis(30));
		assertThat(dispatcher.isAlive()).as("the dispatch thread ended").isFalse();
		assertThat(dispatcher.isDaemon()).isTrue();
		BatcherStats stats = stats();
		assertThat(stats.batches()).isEqualTo(3);
		assertThat(stats.dispatched()).isEqualTo(5);
		assertThat(stats.succeeded()).isEqualTo(5);
		assertThat(stats.expired()).isEqualTo(1);
		assertThat(stats.cancelled()).as("dropped: its caller completed it").isEqualTo(1);
		assertThat(stats.runningBatches()).isZero();
		assertThat(stats.queued()).isZero();
		this.state.lock.lock();
		try {
			assertThat(this.state.isTerminated()).isTrue();
		}
		finally {
			this.state.lock.unlock();
		}
	}

}
