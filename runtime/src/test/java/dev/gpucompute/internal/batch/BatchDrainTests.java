package dev.gpucompute.internal.batch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.internal.batch.BatchQueue.Item;
import dev.gpucompute.internal.core.ContextState;

/**
 * The end of a batcher ({@link BatchDrain}): shutdown wakes the parked dispatchers and is idempotent;
 * the wait for termination answers at once while open and returns once the queue is empty and the
 * last reservation ended; shutdownNow abandons queued and running items with the reasons the API
 * documents, off the lock, counts only the futures it completed and cancels the sweep. Driven by
 * hand, with the batcher's state set as the dispatchers would; waits are observed through the lock's
 * condition queues, never through a clock.
 */
class BatchDrainTests {

	private static final Duration FOREVER = Duration.ofDays(1);

	private final BatcherState<String, String> state = new BatcherState<>(new BatchPacing(4, 0));

	private final ScheduledThreadPoolExecutor housekeeping = new ScheduledThreadPoolExecutor(1);

	private final BatchDeadlines<String, String> deadlines;

	private final BatchAdmission<String, String> admission;

	private final BatchDrain<String, String> drain;

	BatchDrainTests() {
		this.housekeeping.setRemoveOnCancelPolicy(true);
		ContextState lifecycle = new ContextState(7, null, null);
		this.deadlines = new BatchDeadlines<>(this.state, "b", this.housekeeping, Runnable::run);
		this.admission = new BatchAdmission<>(this.state, this.deadlines, lifecycle, "b", (item) -> item, 4, 100, 1);
		this.drain = new BatchDrain<>(this.state, this.deadlines, "b", lifecycle, Duration.ofSeconds(1));
	}

	@AfterEach
	void stop() {
		this.housekeeping.shutdownNow();
	}

	@Test
	void shutdownWakesTheParkedDispatchersOnceAndRefusesNewItems() throws Exception {
		Thread dispatcher = park(this.state.work);
		assertThat(this.drain.isShutdown()).isFalse();

		this.drain.shutdown();

		assertThat(waiters(this.state.work)).as("parked dispatchers woken").isZero();
		dispatcher.join();
		assertThat(this.drain.isShutdown()).isTrue();
		this.drain.shutdown();
		assertThat(this.drain.isShutdown()).isTrue();
		assertThatThrownBy(() -> this.admission.submit("a", BatchQueue.NONE)).isInstanceOf(ContextClosedException.class);
	}

	@Test
	void theWaitForTerminationAnswersAtOnceWhileOpenAndChecksItsTimeout() {
		assertTimeoutPreemptively(Duration.ofSeconds(30), () -> assertThat(this.drain.awaitTermination(FOREVER)).isFalse());
		assertThatThrownBy(() -> this.drain.awaitTermination(Duration.ofSeconds(-1)))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessage("timeout must not be negative, got PT-1S");

		this.drain.shutdown();
		assertThat(this.drain.awaitTermination(Duration.ZERO)).as("nothing queued, nothing running").isTrue();
	}

	@Test
	void theWaitForTerminationEndsOnceTheQueueIsEmptyAndTheLastReservationEnded() throws Exception {
		this.admission.submit("a", BatchQueue.NONE);
		this.drain.shutdown();
		assertThat(this.drain.awaitTermination(Duration.ZERO)).as("an item is queued").isFalse();

		// A dispatcher took it and runs it.
		this.state.lock.lock();
		try {
			this.state.queue.removeAll();
			this.state.inFlight = 1;
		}
		finally {
			this.state.lock.unlock();
		}
		assertThat(this.drain.awaitTermination(Duration.ZERO)).as("a batch runs").isFalse();

		CompletableFuture<Boolean> terminated = CompletableFuture.supplyAsync(() -> this.drain.awaitTermination(FOREVER));
		awaitWaiters(this.state.finished);
		assertThat(terminated).isNotDone();
		this.state.lock.lock();
		try {
			this.state.inFlight = 0;
			this.state.finished.signalAll();
		}
		finally {
			this.state.lock.unlock();
		}
		assertThat(terminated.get(30, TimeUnit.SECONDS)).isTrue();
	}

	@Test
	void shutdownNowAbandonsQueuedAndRunningItemsWithTheirReasonOffTheLockAndCountsThem() {
		CompletableFuture<String> queued = this.admission.submit("q", TimeUnit.HOURS.toNanos(1));
		assertThat(this.housekeeping.getQueue()).as("a sweep for the queued item's deadline").hasSize(1);
		List<Boolean> completedUnderLock = Collections.synchronizedList(new ArrayList<>());
		queued.whenComplete((result, failure) -> completedUnderLock.add(this.state.lock.isHeldByCurrentThread()));
		// A batch of two runs; its handler's caller completed one of them already.
		Item<String, String> running = new Item<>("r", "r", 0, BatchQueue.NONE, this.deadlines::cancelled);
		Item<String, String> completed = new Item<>("c", "r", 0, BatchQueue.NONE, this.deadlines::cancelled);
		completed.future.complete("done");
		this.state.running.add(List.of(running, completed));

		int abandoned = this.drain.shutdownNow();

		assertThat(abandoned).isEqualTo(2);
		String what = "Batcher 'b' of GPU context #7 closed before this item ";
		assertThatThrownBy(queued::join).cause()
			.isInstanceOf(ContextClosedException.class)
			.hasMessage(what + "ran: it was abandoned at close, still queued when the drain timeout of PT1S passed");
		assertThatThrownBy(running.future::join).cause()
			.isInstanceOf(ContextClosedException.class)
			.hasMessage(what + "finished: it was abandoned at close, its batch still running when the drain timeout "
					+ "of PT1S passed");
		assertThat(completed.future.join()).isEqualTo("done");
		assertThat(completedUnderLock).containsExactly(false);
		assertThat(this.state.queue.size()).isZero();
		assertThat(this.housekeeping.getQueue()).as("the sweep cancelled").isEmpty();
		assertThat(this.drain.isShutdown()).isTrue();
		assertThat(abandonedCount()).isEqualTo(2);

		assertThat(this.drain.shutdownNow()).as("nothing left to abandon").isZero();
		assertThat(abandonedCount()).isEqualTo(2);
	}

	@Test
	void shutdownNowWakesParkedDispatchersAndTheWaitForTerminationEvenWhenShutDownAlready() throws Exception {
		this.admission.submit("a", BatchQueue.NONE);
		this.drain.shutdown();
		Thread dispatcher = park(this.state.work);
		CompletableFuture<Boolean> terminated = CompletableFuture.supplyAsync(() -> this.drain.awaitTermination(FOREVER));
		awaitWaiters(this.state.finished);

		assertThat(this.drain.shutdownNow()).isEqualTo(1);

		assertThat(waiters(this.state.work)).as("parked dispatchers woken").isZero();
		dispatcher.join();
		assertThat(terminated.get(30, TimeUnit.SECONDS)).as("the queue emptied: the wait ends").isTrue();
	}

	private long abandonedCount() {
		return this.state.counters.snapshot("b", 0, 0, 4, 100).abandoned();
	}

	/** A thread parked on {@code condition} until signalled once. */
	private Thread park(Condition condition) throws InterruptedException {
		Thread parked = new Thread(() -> {
			this.state.lock.lock();
			try {
				condition.awaitUninterruptibly();
			}
			finally {
				this.state.lock.unlock();
			}
		}, "test-parked");
		parked.setDaemon(true);
		parked.start();
		awaitWaiters(condition);
		return parked;
	}

	private int waiters(Condition condition) {
		this.state.lock.lock();
		try {
			return this.state.lock.getWaitQueueLength(condition);
		}
		finally {
			this.state.lock.unlock();
		}
	}

	private void awaitWaiters(Condition condition) throws InterruptedException {
		long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (waiters(condition) != 1) {
			assertThat(System.nanoTime()).as("a thread parks").isLessThan(giveUp);
			Thread.sleep(1);
		}
	}

}
