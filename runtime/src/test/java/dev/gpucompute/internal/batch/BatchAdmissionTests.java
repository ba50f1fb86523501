package dev.gpucompute.internal.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.internal.batch.BatchQueue.Item;
import dev.gpucompute.internal.core.ContextState;

/**
 * How items get into a batcher ({@link BatchAdmission}): refused with the queue unchanged when it is
 * full or the batcher is shut down, with the messages and retry-after hint the API promises; keys
 * and deadlines as the settings say; a call's item run inline only when the batcher is idle; and an
 * idle dispatcher woken only by an item that can make a batch ready. Single-threaded but for one
 * parked dispatcher, observed through the lock's condition queue, never through a clock.
 */
class BatchAdmissionTests {

	private static final long HOUR = TimeUnit.HOURS.toNanos(1);

	private static final int MAX_BATCH = 2;

	private static final int MAX_QUEUED = 3;

	private final ContextState lifecycle = new ContextState(7, null, null);

	private final ScheduledThreadPoolExecutor housekeeping = new ScheduledThreadPoolExecutor(1);

	private BatcherState<String, String> state;

	private BatchAdmission<String, String> admission;

	BatchAdmissionTests() {
		withDelay(0);
	}

	/** A fresh batcher's parts, holding for {@code delayNanos} after a batch. */
	private void withDelay(long delayNanos) {
		this.state = new BatcherState<>(new BatchPacing(MAX_BATCH, delayNanos));
		BatchDeadlines<String, String> deadlines = new BatchDeadlines<>(this.state, "b", this.housekeeping, Runnable::run);
		// The key is an item's first letter; two batch slots.
		this.admission = new BatchAdmission<>(this.state, deadlines, this.lifecycle, "b", (item) -> item.substring(0, 1),
				MAX_BATCH, MAX_QUEUED, 2);
	}

	@AfterEach
	void stop() {
		this.housekeeping.shutdownNow();
	}

	private BatcherStats stats() {
		return this.state.counters.snapshot("b", this.state.queue.size(), this.state.inFlight, MAX_BATCH, MAX_QUEUED);
	}

	@Test
	void aFullQueueRefusesWithoutQueuingAndHintsWhenToRetryFromTheRecentBatches() {
		for (int i = 0; i < MAX_QUEUED; i++) {
			this.admission.submit("a" + i, BatchQueue.NONE);
		}
		// Before any batch ran there is no rate to go by: a second.
		assertThatThrownBy(() -> this.admission.submit("a", BatchQueue.NONE)).isInstanceOf(BatchQueueFullException.class)
			.hasMessage("Batcher 'b' is full: 3 items are queued (its max-queued); retry after 1000 ms")
			.satisfies((ex) -> assertThat(((BatchQueueFullException) ex).retryAfter()).isEqualTo(Duration.ofSeconds(1)));

		// 10 items in 10 ms: 1 ms an item, 3 queued over 2 slots.
		this.state.pacing.batchEnded(10, 10_000_000);
		assertThatThrownBy(() -> this.admission.runInlineOrQueue(this.admission.newItem("a", BatchQueue.NONE)))
			.isInstanceOfSatisfying(BatchQueueFullException.class,
					(ex) -> assertThat(ex.retryAfter()).isEqualTo(Duration.ofNanos(1_500_000)));

		assertThat(this.state.queue.size()).isEqualTo(MAX_QUEUED);
		assertThat(stats().submitted()).isEqualTo(MAX_QUEUED);
		assertThat(stats().rejected()).isEqualTo(2);
	}

	@Test
	void aShutDownBatcherRefusesEveryItemAndSaysWhenItsContextIsClosing() {
		this.state.shutDown();
		assertThatThrownBy(() -> this.admission.submit("a", BatchQueue.NONE)).isInstanceOf(ContextClosedException.class)
			.hasMessage("Batcher 'b' is closed");
		this.lifecycle.closing();
		assertThatThrownBy(() -> this.admission.runInlineOrQueue(this.admission.newItem("a", BatchQueue.NONE)))
			.isInstanceOf(ContextClosedException.class)
			.hasMessage("Batcher 'b' is closed (its GPU context is closing or closed)");
		assertThat(this.state.queue.size()).isZero();
		assertThat(stats().submitted()).isZero();
		assertThat(stats().rejected()).isZero();
	}

	@Test
	void itemsGetTheirKeyAndADeadlineThatNeverOverflows() {
		Item<String, String> timed = this.admission.newItem("apple", 1_000);
		assertThat(timed.key()).isEqualTo("a");
		assertThat(timed.deadline).isEqualTo(timed.enqueuedAt + 1_000);
		assertThat(this.admission.newItem("x", BatchQueue.NONE).deadline).isEqualTo(BatchQueue.NONE);
		assertThat(this.admission.newItem("x", Long.MAX_VALUE - 1).deadline).as("past what nanoTime holds")
			.isEqualTo(BatchQueue.NONE);
		assertThatThrownBy(() -> this.admission.submit(null, BatchQueue.NONE)).isInstanceOf(NullPointerException.class)
			.hasMessage("item");
		assertThat(this.state.queue.size()).as("making an item queues nothing").isZero();
	}

	@Test
	void onlyItemsWithADeadlineScheduleASweepAndCancellingOneDropsIt() {
		this.admission.submit("a", BatchQueue.NONE);
		assertThat(this.housekeeping.getQueue()).isEmpty();
		CompletableFuture<String> timed = this.admission.submit("b", HOUR);
		assertThat(this.housekeeping.getQueue()).hasSize(1);

		timed.cancel(false);
		assertThat(this.state.queue.size()).isEqualTo(1);
		assertThat(stats().cancelled()).isEqualTo(1);
	}

	@Test
	void aCallRunsInlineOnlyWhenTheBatcherIsIdle() {
		Item<String, String> first = this.admission.newItem("a1", BatchQueue.NONE);
		List<Item<String, String>> inline = this.admission.runInlineOrQueue(first);

		assertThat(inline).containsExactly(first);
		assertThat(first.queued).isFalse();
		assertThat(this.state.running).containsExactly(inline);
		assertThat(this.state.inFlight).isEqualTo(1);
		assertThat(this.state.busy).isEqualTo(1);
		assertThat(this.state.queue.size()).isZero();
		assertThat(stats()).extracting(BatcherStats::submitted, BatcherStats::batches, BatcherStats::dispatched)
			.containsExactly(1L, 1L, 1L);

		// A batch runs: the next call's item waits in the queue like a submitted one.
		Item<String, String> second = this.admission.newItem("a2", BatchQueue.NONE);
		assertThat(this.admission.runInlineOrQueue(second)).isNull();
		assertThat(second.queued).isTrue();
		assertThat(this.state.queue.size()).isEqualTo(1);
		assertThat(stats()).extracting(BatcherStats::submitted, BatcherStats::batches).containsExactly(2L, 1L);
	}

	@Test
	void aCallRightAfterABatchOfSeveralIsHeldForThatBatchsCallers() {
		withDelay(HOUR);
		this.state.pacing.batchEnded(MAX_BATCH, 1_000);

		Item<String, String> item = this.admission.newItem("a", BatchQueue.NONE);
		assertThat(this.admission.runInlineOrQueue(item)).isNull();
		assertThat(this.state.queue.size()).isEqualTo(1);
		assertThat(this.state.inFlight).isZero();
	}

	@Test
	void aQueuedItemWakesAnIdleDispatcherOnlyWhenItCanMakeABatchReady() throws Exception {
		// A batch runs and an item of key 'a' waits: a parked dispatcher holds for the oldest item's delay.
		this.state.busy = 1;
		this.state.queue.add(this.admission.newItem("a0", BatchQueue.NONE));
		Thread dispatcher = parkDispatcher();

		this.admission.submit("b0", BatchQueue.NONE);
		assertThat(waiters()).as("neither the first item nor a full key: left waiting").isEqualTo(1);

		this.admission.submit("a1", BatchQueue.NONE);
		assertThat(waiters()).as("key 'a' fills a batch: woken").isZero();
		dispatcher.join();

		// The first item while a batch runs.
		this.state.queue.removeAll();
		dispatcher = parkDispatcher();
		this.admission.submit("c0", BatchQueue.NONE);
		assertThat(waiters()).as("the queue was empty: woken").isZero();
		dispatcher.join();

		// Another item while nothing runs.
		this.state.busy = 0;
		dispatcher = parkDispatcher();
		this.admission.submit("d0", BatchQueue.NONE);
		assertThat(waiters()).as("no batch runs: woken").isZero();
		dispatcher.join();
	}

	/** A dispatcher parked on the batcher's work condition as an idle one, until signalled. */
	private Thread parkDispatcher() throws InterruptedException {
		Thread dispatcher = new Thread(() -> {
			this.state.lock.lock();
			try {
				this.state.idleDispatchers++;
				this.state.work.awaitUninterruptibly();
				this.state.idleDispatchers--;
			}
			finally {
				this.state.lock.unlock();
			}
		}, "test-dispatcher");
		dispatcher.setDaemon(true);
		dispatcher.start();
		long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (waiters() != 1) {
			assertThat(System.nanoTime()).as("the dispatcher parks").isLessThan(giveUp);
			Thread.sleep(1);
		}
		return dispatcher;
	}

	private int waiters() {
		this.state.lock.lock();
		try {
			return this.state.lock.getWaitQueueLength(this.state.work);
		}
		finally {
			this.state.lock.unlock();
		}
	}

}
