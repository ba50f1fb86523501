package dev.gpucompute.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;

import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.StreamPriority;

/**
 * The pool's books ({@link PoolLedger}) on slots of fake streams: which stream a booking takes, in
 * which order, the counts against the maximum and the priorities' limits, and a return after the
 * pool stopped. Single-threaded: the ledger is guarded by the pool's lock, which is the caller's.
 */
class PoolLedgerTests {

	private static final int NORMAL = StreamPriority.NORMAL.ordinal();

	private static final int HIGH = StreamPriority.HIGH.ordinal();

	@Test
	void anIdleStreamOfItsPriorityGoesFirstTheMostRecentlyReturnedOne() {
		PoolLedger ledger = new PoolLedger(3, new int[] { 3, 3 });
		PoolSlot older = FakeStream.slot("pool-1", StreamPriority.NORMAL);
		PoolSlot newer = FakeStream.slot("pool-2", StreamPriority.NORMAL);
		ledger.addIdle(older);
		ledger.addIdle(newer);
		assertThat(ledger.total()).isEqualTo(2);
		assertThat(ledger.idleCount()).isEqualTo(2);
		assertThat(ledger.takeIdle(HIGH)).as("none of its priority").isNull();
		assertThat(ledger.takeIdle(NORMAL)).isSameAs(newer);
		assertThat(newer.leased).isTrue();
		assertThat(older.leased).isFalse();
		assertThat(ledger.idleCount()).isEqualTo(1);
		assertThat(ledger.total()).as("still the pool's").isEqualTo(2);
	}

	@Test
	void belowTheMaximumRoomIsReservedAtItTheOtherPrioritysLongestIdleStreamIsReplaced() {
		PoolLedger ledger = new PoolLedger(3, new int[] { 3, 3 });
		PoolSlot first = FakeStream.slot("pool-1", StreamPriority.NORMAL);
		PoolSlot second = FakeStream.slot("pool-2", StreamPriority.NORMAL);
		ledger.addIdle(first);
		ledger.addIdle(second);
		assertThat(ledger.obtainable(HIGH)).as("one new, two replaced").isEqualTo(3);
		assertThat(ledger.reserveNew()).isTrue();
		assertThat(ledger.reserveNew()).as("at the maximum").isFalse();
		assertThat(ledger.total()).isEqualTo(3);
		assertThat(ledger.obtainable(HIGH)).isEqualTo(2);
		assertThat(ledger.evictFor(HIGH)).isSameAs(first);
		assertThat(ledger.total()).as("the replacement takes its place").isEqualTo(3);
		assertThat(ledger.obtainable(HIGH)).isEqualTo(1);
		assertThat(ledger.obtainable(NORMAL)).isEqualTo(1);
		assertThat(ledger.evictFor(NORMAL)).as("no idle high stream").isNull();
	}

	@Test
	void leasesCountAgainstTheirPrioritysLimitAndTheMostLeasedAtOnce() {
		PoolLedger ledger = new PoolLedger(4, new int[] { 9, 1 });
		assertThat(ledger.limit(NORMAL)).as("capped at the maximum").isEqualTo(4);
		assertThat(ledger.limit(HIGH)).isEqualTo(1);
		ledger.book(HIGH, 1);
		assertThat(ledger.room(HIGH)).isZero();
		assertThat(ledger.room(NORMAL)).as("limits are per priority").isEqualTo(4);
		PoolSlot a = FakeStream.slot("pool-2", StreamPriority.NORMAL);
		ledger.book(NORMAL, 2);
		assertThat(ledger.active()).isEqualTo(3);
		assertThat(ledger.room(NORMAL)).isEqualTo(2);
		ledger.returned(a);
		assertThat(ledger.active()).isEqualTo(2);
		assertThat(ledger.room(NORMAL)).isEqualTo(3);
		assertThat(ledger.idleCount()).isEqualTo(1);
		assertThat(ledger.highWaterMark()).isEqualTo(3);
		assertThat(ledger.acquisitions()).isEqualTo(3);
	}

	@Test
	void cancellingABookingWhoseCreationFailedPutsBackWhatItTook() {
		PoolLedger ledger = new PoolLedger(3, new int[] { 3, 3 });
		PoolSlot idle = FakeStream.slot("pool-1", StreamPriority.NORMAL);
		ledger.addIdle(idle);
		assertThat(ledger.takeIdle(NORMAL)).isSameAs(idle);
		assertThat(ledger.reserveNew()).isTrue();
		assertThat(ledger.reserveNew()).isTrue();
		ledger.book(NORMAL, 3);
		// The first of the two new streams was created; the second failed.
		PoolSlot created = FakeStream.slot("pool-2", StreamPriority.NORMAL);
		created.leased = true;
		ledger.cancel(NORMAL, 3, List.of(idle, created), 1);
		assertThat(idle.leased).isFalse();
		assertThat(created.leased).isFalse();
		assertThat(ledger.idleCount()).isEqualTo(2);
		assertThat(ledger.total()).isEqualTo(2);
		assertThat(ledger.active()).isZero();
		assertThat(ledger.room(NORMAL)).isEqualTo(3);
		assertThat(ledger.obtainable(NORMAL)).isEqualTo(3);
	}

	@Test
	void onceClosedNothingIsLeasedAndAReturnedStreamStaysOutOfTheIdleQueues() {
		PoolLedger ledger = new PoolLedger(2, new int[] { 2, 2 });
		PoolSlot slot = FakeStream.slot("pool-1", StreamPriority.HIGH);
		ledger.addIdle(slot);
		ledger.takeIdle(HIGH);
		ledger.book(HIGH, 1);
		assertThatCode(ledger::checkOpen).doesNotThrowAnyException();
		ledger.close();
		assertThat(ledger.isClosed()).isTrue();
		assertThatThrownBy(ledger::checkOpen).isInstanceOf(ContextClosedException.class)
			.hasMessage("The stream pool is shut down: its GPU context is closing or closed");
		ledger.returned(slot);
		assertThat(ledger.active()).isZero();
		assertThat(ledger.idleCount()).isZero();
		ledger.clear();
		assertThat(ledger.total()).isZero();
	}

}
