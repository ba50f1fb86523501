package dev.gpucompute.internal.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Delayed;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.batch.BatchTimeoutException;
import dev.gpucompute.internal.batch.BatchQueue.Item;

/**
 * The items that leave a batcher's queue without running ({@link BatchDeadlines}): a sweep times out
 * exactly those past their deadline, counts them, completes their futures off the lock and keeps one
 * timer for the next deadline; a cancelled future drops its item once. Driven by hand: the sweep is
 * called directly and the housekeeping timer's queue is inspected, nothing waits for a clock.
 */
class BatchDeadlinesTests {

	private static final long HOUR = TimeUnit.HOURS.toNanos(1);

	private final BatcherState<String, String> state = new BatcherState<>(new BatchPacing(8, 0));

	private final ScheduledThreadPoolExecutor housekeeping = new ScheduledThreadPoolExecutor(1);

	/** Tasks handed to the completion executor, and whether the batcher's lock was held when each ran. */
	private final List<Boolean> completionsUnderLock = new ArrayList<>();

	private final Executor completions = (task) -> {
		this.completionsUnderLock.add(this.state.lock.isHeldByCurrentThread());
		task.run();
	};

	private final BatchDeadlines<String, String> deadlines;

	BatchDeadlinesTests() {
		this.housekeeping.setRemoveOnCancelPolicy(true);
		this.deadlines = new BatchDeadlines<>(this.state, "b", this.housekeeping, this.completions);
	}

	@AfterEach
	void stop() {
		this.housekeeping.shutdownNow();
	}

	private Item<String, String> queued(String value, long enqueuedAt, long deadline) {
		Item<String, String> item = new Item<>(value, "k", enqueuedAt, deadline, this.deadlines::cancelled);
		this.state.queue.add(item);
		return item;
	}

	/** The delays of the sweeps scheduled now, nanoseconds. */
	private List<Long> scheduledSweeps() {
		List<Long> delays = new ArrayList<>();
		for (Runnable task : this.housekeeping.getQueue()) {
			delays.add(((Delayed) task).getDelay(TimeUnit.NANOSECONDS));
		}
		return delays;
	}

	@Test
	void aSweepTimesOutOnlyTheItemsPastTheirDeadlineAndSchedulesTheNextOne() {
		long now = System.nanoTime();
		Item<String, String> late = queued("late", now - 5_000_000, now - 1);
		Item<String, String> later = queued("later", now, now + HOUR);
		Item<String, String> none = queued("none", now, BatchQueue.NONE);

		this.deadlines.sweep();

		assertThat(late.future).isCompletedExceptionally();
		assertThatThrownBy(late.future::get).isInstanceOf(ExecutionException.class)
			.cause()
			.isInstanceOf(BatchTimeoutException.class)
			.hasMessageStartingWith("Item of batcher 'b' timed out after waiting ")
			.satisfies((ex) -> assertThat(((BatchTimeoutException) ex).waited()).isGreaterThanOrEqualTo(Duration.ofMillis(5)));
		assertThat(later.future).isNotDone();
		assertThat(none.future).isNotDone();
		assertThat(this.state.queue.size()).isEqualTo(2);
		assertThat(this.state.counters.snapshot("b", 0, 0, 8, 8).expired()).isEqualTo(1);
		assertThat(this.completionsUnderLock).as("completed once, off the batcher's lock").containsExactly(false);
		assertThat(scheduledSweeps()).as("one sweep, for the remaining deadline")
			.singleElement()
			.satisfies((delay) -> assertThat(delay).isBetween(HOUR - TimeUnit.MINUTES.toNanos(10), HOUR));
	}

	@Test
	void aSweepWithNothingExpiredCompletesNothingAndLeavesNoTimerForItemsWithoutDeadline() {
		Item<String, String> none = queued("none", System.nanoTime(), BatchQueue.NONE);

		this.deadlines.sweep();

		assertThat(none.future).isNotDone();
		assertThat(this.state.queue.size()).isEqualTo(1);
		assertThat(this.completionsUnderLock).isEmpty();
		assertThat(scheduledSweeps()).isEmpty();
		assertThat(this.state.counters.snapshot("b", 0, 0, 8, 8).expired()).isZero();
	}

	@Test
	void oneTimerRunsByTheEarliestDeadlineAndCloseCancelsIt() {
		long now = System.nanoTime();
		this.state.lock.lock();
		try {
			this.deadlines.scheduleBy(now + 2 * HOUR);
			this.deadlines.scheduleBy(now + HOUR);
			this.deadlines.scheduleBy(now + 3 * HOUR);
			assertThat(scheduledSweeps()).singleElement().satisfies((delay) -> assertThat(delay).isLessThanOrEqualTo(HOUR));

			this.deadlines.cancelSweep();
			assertThat(scheduledSweeps()).isEmpty();
		}
		finally {
			this.state.lock.unlock();
		}
	}

	@Test
	void aCancelledFutureDropsItsQueuedItemOnceAndAnItemAlreadyTakenIsNotCounted() {
		long now = System.nanoTime();
		Item<String, String> first = queued("first", now, BatchQueue.NONE);
		Item<String, String> second = queued("second", now + 1, BatchQueue.NONE);

		assertThat(first.future.cancel(false)).isTrue();
		// A CompletableFuture answers true to every cancel once cancelled, so the batcher hears of it again.
		assertThat(first.future.cancel(false)).isTrue();
		assertThat(this.state.queue.size()).isEqualTo(1);
		assertThat(this.state.counters.snapshot("b", 0, 0, 8, 8).cancelled()).isEqualTo(1);

		// Taken into a batch: its caller's cancel no longer concerns the queue.
		assertThat(this.state.queue.take(now + 2, 8, new ArrayList<>(), new ArrayList<>())).containsExactly(second);
		second.future.cancel(false);
		assertThat(this.state.counters.snapshot("b", 0, 0, 8, 8).cancelled()).isEqualTo(1);
	}

	@Test
	void expiredItemsFailWithHowLongTheyWaited() {
		Item<String, String> item = new Item<>("x", "k", 1_000, 2_000, (i) -> {
		});

		this.deadlines.expire(List.of(item), 1_000 + 7_000_000);

		assertThatThrownBy(item.future::get).cause()
			.isInstanceOf(BatchTimeoutException.class)
			.hasMessage("Item of batcher 'b' timed out after waiting 7 ms in the queue; it was not run");
	}

}
