package dev.gpucompute.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamPriority;

/**
 * The hand-off of streams to waiting callers ({@link WaitQueue}), on a ledger of fake streams: who
 * must queue, the order of the grants, a head that holds back the callers behind it, and the ways a
 * waiter leaves (time-out, interrupt, the pool stopping). Callers are threads that wait a minute at
 * most; the test waits for them to be queued by polling the queue under its lock, never by sleeping.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WaitQueueTests {

	private static final int NORMAL = StreamPriority.NORMAL.ordinal();

	private static final int HIGH = StreamPriority.HIGH.ordinal();

	private final ReentrantLock lock = new ReentrantLock();

	private PoolLedger ledger;

	private WaitQueue queue;

	private final List<Caller> callers = new ArrayList<>();

	private void pool(int maxSize, int normalLimit, int highLimit) {
		this.ledger = new PoolLedger(maxSize, new int[] { normalLimit, highLimit });
		this.queue = new WaitQueue(this.lock, this.ledger);
	}

	@AfterEach
	void stopCallers() throws InterruptedException {
		for (Caller caller : this.callers) {
			caller.interrupt();
			caller.join();
		}
	}

	/** A stream of {@code priority} leased now (created for its caller). */
	private PoolSlot leased(StreamPriority priority) {
		this.lock.lock();
		try {
			assertThat(this.ledger.reserveNew()).isTrue();
			PoolSlot slot = FakeStream.slot("pool-" + this.ledger.total(), priority);
			slot.leased = true;
			this.ledger.book(priority.ordinal(), 1);
			return slot;
		}
		finally {
			this.lock.unlock();
		}
	}

	/** Returns {@code slot} as the pool does. */
	private void giveBack(PoolSlot slot) {
		this.lock.lock();
		try {
			slot.leased = false;
			this.ledger.returned(slot);
			this.queue.serve();
		}
		finally {
			this.lock.unlock();
		}
	}

	private boolean mustQueue(StreamPriority priority, int count) {
		this.lock.lock();
		try {
			return this.queue.mustQueue(priority.ordinal(), count);
		}
		finally {
			this.lock.unlock();
		}
	}

	private int pending() {
		this.lock.lock();
		try {
			return this.queue.pending();
		}
		finally {
			this.lock.unlock();
		}
	}

	/** Starts a caller that waits for {@code count} streams, and returns once it is queued. */
	private Caller waitFor(StreamPriority priority, int count) {
		int before = pending();
		Caller caller = new Caller(priority, count);
		this.callers.add(caller);
		caller.start();
		while (pending() == before) {
			assertThat(caller.isAlive()).as("a caller that must wait").isTrue();
			Thread.onSpinWait();
		}
		return caller;
	}

	@Test
	void aCallerQueuesWhenWhatItAsksForIsNotThereOrItsPriorityIsAtItsLimit() {
		pool(2, 2, 1);
		assertThat(mustQueue(StreamPriority.NORMAL, 2)).as("two can be created").isFalse();
		assertThat(mustQueue(StreamPriority.NORMAL, 3)).isTrue();
		leased(StreamPriority.HIGH);
		assertThat(mustQueue(StreamPriority.HIGH, 1)).as("the high limit is reached").isTrue();
		assertThat(mustQueue(StreamPriority.NORMAL, 1)).isFalse();
	}

	@Test
	void aGrantTakesIdleStreamsThenNewOnesThenReplacesIdleOnesOfTheOtherPriority() {
		pool(3, 3, 3);
		PoolSlot high = FakeStream.slot("pool-1-high", StreamPriority.HIGH);
		PoolSlot normal = FakeStream.slot("pool-2", StreamPriority.NORMAL);
		this.lock.lock();
		try {
			this.ledger.addIdle(high);
			this.ledger.addIdle(normal);
			WaitQueue.Waiter waiter = this.queue.grantNow(NORMAL, 3);
			assertThat(waiter.served).isTrue();
			assertThat(waiter.slots).containsExactly(normal);
			assertThat(waiter.creates).isEqualTo(2);
			assertThat(waiter.evicted).containsExactly(high);
			assertThat(this.ledger.active()).isEqualTo(3);
			assertThat(this.ledger.total()).isEqualTo(3);
			assertThat(this.ledger.idleCount()).isZero();
		}
		finally {
			this.lock.unlock();
		}
	}

	@Test
	void aCallerThatMayNotWaitTimesOutAtOnceAndIsCounted() {
		pool(1, 1, 1);
		leased(StreamPriority.NORMAL);
		this.lock.lock();
		try {
			assertThat(this.queue.mustQueue(NORMAL, 1)).isTrue();
			assertThatThrownBy(() -> this.queue.await(NORMAL, 1, Duration.ZERO))
				.isInstanceOf(PoolExhaustedException.class)
				.hasMessageContaining("(active 1, max 1, waiting 1)");
			assertThat(this.queue.pending()).isZero();
			assertThat(this.queue.timeouts()).isEqualTo(1);
			assertThat(this.queue.lastTimeoutAt()).isNotZero();
			assertThat(this.queue.mustQueue(NORMAL, 1)).as("nobody left queued").isTrue();
		}
		finally {
			this.lock.unlock();
		}
	}

	@Test
	void aReturnedStreamIsHandedToTheWaiterNotToWhoeverAsksNext() throws InterruptedException {
		pool(1, 1, 1);
		PoolSlot slot = leased(StreamPriority.NORMAL);
		Caller waiter = waitFor(StreamPriority.NORMAL, 1);
		assertThat(mustQueue(StreamPriority.NORMAL, 1)).isTrue();
		giveBack(slot);
		waiter.join();
		assertThat(waiter.failure).isNull();
		assertThat(waiter.waiter.slots).containsExactly(slot);
		assertThat(slot.leased).isTrue();
		assertThat(pending()).isZero();
		assertThat(this.ledger.active()).isEqualTo(1);
	}

	@Test
	void highPriorityWaitersAreServedBeforeNormalOnes() throws InterruptedException {
		pool(1, 1, 1);
		PoolSlot slot = leased(StreamPriority.NORMAL);
		Caller normal = waitFor(StreamPriority.NORMAL, 1);
		Caller high = waitFor(StreamPriority.HIGH, 1);
		giveBack(slot);
		high.join();
		// At the maximum with only a normal stream idle: the high waiter replaces it.
		assertThat(high.waiter.slots).isEmpty();
		assertThat(high.waiter.evicted).containsExactly(slot);
		assertThat(high.waiter.creates).isEqualTo(1);
		assertThat(normal.isAlive()).isTrue();
		assertThat(pending()).isEqualTo(1);
		normal.interrupt();
		normal.join();
		assertThat(normal.failure).isInstanceOf(GpuException.class)
			.hasMessage("Interrupted while waiting for a pooled stream");
		assertThat(normal.interrupted).as("the interrupt is kept").isTrue();
		assertThat(pending()).isZero();
	}

	@Test
	void aCallerQueuesBehindAWaiterOfItsPriorityEvenWithAStreamIdle() {
		pool(2, 2, 2);
		PoolSlot first = leased(StreamPriority.NORMAL);
		leased(StreamPriority.NORMAL);
		waitFor(StreamPriority.NORMAL, 2);
		giveBack(first);
		assertThat(this.ledger.idleCount()).isEqualTo(1);
		assertThat(mustQueue(StreamPriority.NORMAL, 1)).as("first come first").isTrue();
	}

	@Test
	void aHeadHeldBackOnlyByItsPrioritysLimitLetsTheOtherPriorityGo() throws InterruptedException {
		pool(2, 2, 1);
		leased(StreamPriority.HIGH);
		waitFor(StreamPriority.HIGH, 1);
		assertThat(mustQueue(StreamPriority.NORMAL, 1)).as("a new stream can be made").isFalse();
		PoolSlot normal = leased(StreamPriority.NORMAL);
		Caller next = waitFor(StreamPriority.NORMAL, 1);
		giveBack(normal);
		next.join();
		assertThat(next.failure).isNull();
		assertThat(next.waiter.slots).containsExactly(normal);
		assertThat(pending()).isEqualTo(1);
	}

	@Test
	void aHeadWaitingForStreamsHoldsBackEveryoneBehindItUntilItLeaves() throws InterruptedException {
		pool(2, 2, 2);
		PoolSlot first = leased(StreamPriority.NORMAL);
		leased(StreamPriority.NORMAL);
		Caller group = waitFor(StreamPriority.HIGH, 2);
		assertThat(mustQueue(StreamPriority.NORMAL, 1)).isTrue();
		Caller normal = waitFor(StreamPriority.NORMAL, 1);
		giveBack(first);
		// One stream idle, the high group needs two: nobody behind it takes the idle one.
		assertThat(this.ledger.idleCount()).isEqualTo(1);
		assertThat(normal.isAlive()).isTrue();
		group.interrupt();
		group.join();
		assertThat(group.failure).isInstanceOf(GpuException.class);
		normal.join();
		assertThat(normal.failure).isNull();
		assertThat(normal.waiter.slots).containsExactly(first);
	}

	@Test
	void whenThePoolStopsEveryWaiterLeavesWithAContextClosedException() throws InterruptedException {
		pool(1, 1, 1);
		leased(StreamPriority.NORMAL);
		Caller normal = waitFor(StreamPriority.NORMAL, 1);
		Caller high = waitFor(StreamPriority.HIGH, 1);
		this.lock.lock();
		try {
			this.ledger.close();
			this.queue.wakeAll();
		}
		finally {
			this.lock.unlock();
		}
		normal.join();
		high.join();
		assertThat(normal.failure).isInstanceOf(ContextClosedException.class);
		assertThat(high.failure).isInstanceOf(ContextClosedException.class);
		assertThat(pending()).isZero();
	}

	@Test
	void aWaiterInterruptedAfterItsGrantKeepsTheGrantAndTheInterrupt() throws InterruptedException {
		pool(1, 1, 1);
		PoolSlot slot = leased(StreamPriority.NORMAL);
		Caller waiter = waitFor(StreamPriority.NORMAL, 1);
		this.lock.lock();
		try {
			slot.leased = false;
			this.ledger.returned(slot);
			this.queue.serve();
			waiter.interrupt();
		}
		finally {
			this.lock.unlock();
		}
		waiter.join();
		assertThat(waiter.failure).isNull();
		assertThat(waiter.waiter.slots).containsExactly(slot);
		assertThat(waiter.interrupted).isTrue();
	}

	/** A caller waiting, under the lock, for streams; it records what it got and its interrupt. */
	private final class Caller extends Thread {

		private final StreamPriority priority;

		private final int count;

		volatile WaitQueue.Waiter waiter;

		volatile Throwable failure;

		volatile boolean interrupted;

		Caller(StreamPriority priority, int count) {
			this.priority = priority;
			this.count = count;
			setDaemon(true);
		}

		@Override
		public void run() {
			WaitQueueTests.this.lock.lock();
			try {
				this.waiter = WaitQueueTests.this.queue.await(this.priority.ordinal(), this.count, Duration.ofMinutes(1));
			}
			catch (Throwable ex) {
				this.failure = ex;
			}
			finally {
				this.interrupted = Thread.currentThread().isInterrupted();
				WaitQueueTests.this.lock.unlock();
			}
		}

	}

}
