package dev.gpucompute.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

import org.junit.jupiter.api.Test;

import dev.gpucompute.StreamPriority;

/**
 * The pool's streams as device resources ({@link PoolStreams}), on a backend that makes fake
 * streams: names, the list of live streams, the created and destroyed counts, failures of the
 * backend, and that the counts are written under the pool's lock.
 */
class PoolStreamsTests {

	private final List<FakeStream> made = new CopyOnWriteArrayList<>();

	private final RuntimeException[] failure = new RuntimeException[1];

	private final ReentrantLock lock = new ReentrantLock();

	private final PoolStreams streams = new PoolStreams(FakeStream.backend(this.made, this.failure), this.lock);

	@Test
	void createsNamedStreamsOfTheirPriorityAndListsAndCountsThem() {
		PoolSlot idle = this.streams.create(StreamPriority.NORMAL, false);
		PoolSlot leased = this.streams.create(StreamPriority.HIGH, true);
		assertThat(idle.stream.name()).isEqualTo("pool-1");
		assertThat(leased.stream.name()).isEqualTo("pool-2-high");
		assertThat(idle.priority).isEqualTo(StreamPriority.NORMAL);
		assertThat(leased.priority).isEqualTo(StreamPriority.HIGH);
		assertThat(idle.leased).isFalse();
		assertThat(leased.leased).isTrue();
		assertThat(this.streams.all()).containsExactly(idle, leased);
		assertThat(this.made).extracting(FakeStream::name).containsExactly("pool-1", "pool-2-high");
		assertThat(this.streams.created()).isEqualTo(2);
		assertThat(this.streams.destroyed()).isZero();
	}

	@Test
	void aCreationTheBackendRefusesIsThrownAndCountsNothing() {
		this.failure[0] = new IllegalStateException("no more streams");
		assertThatThrownBy(() -> this.streams.create(StreamPriority.NORMAL, true)).isSameAs(this.failure[0]);
		assertThat(this.streams.all()).isEmpty();
		assertThat(this.streams.created()).isZero();
	}

	@Test
	void destroyingAStreamMarksItAndTakesItOutOfTheList() {
		PoolSlot first = this.streams.create(StreamPriority.NORMAL, false);
		PoolSlot second = this.streams.create(StreamPriority.NORMAL, false);
		this.streams.destroy(first);
		assertThat(first.destroyed).isTrue();
		assertThat(this.made.get(0).destroyed).isTrue();
		assertThat(second.destroyed).isFalse();
		assertThat(this.streams.all()).containsExactly(second);
		assertThat(this.streams.created()).isEqualTo(2);
		assertThat(this.streams.destroyed()).isEqualTo(1);
	}

	@Test
	void aStreamWhoseDestructionFailsIsGoneAllTheSame() {
		PoolSlot slot = this.streams.create(StreamPriority.HIGH, false);
		this.made.get(0).destroyFailure = new IllegalStateException("device lost");
		assertThatCode(() -> this.streams.destroy(slot)).as("logged, not thrown").doesNotThrowAnyException();
		assertThat(slot.destroyed).isTrue();
		assertThat(this.streams.all()).isEmpty();
		assertThat(this.streams.destroyed()).isEqualTo(1);
	}

	@Test
	void theBackendIsCalledOutsideTheLockAndTheCountsAreWrittenUnderIt() throws Exception {
		AtomicReference<PoolSlot> created = new AtomicReference<>();
		Thread creator = new Thread(() -> created.set(this.streams.create(StreamPriority.NORMAL, true)));
		this.lock.lock();
		try {
			creator.start();
			// The stream is made while this thread holds the lock; its booking waits for the lock.
			while (this.made.isEmpty() || !this.lock.hasQueuedThread(creator)) {
				assertThat(creator.isAlive()).as("the creator waits for the lock").isTrue();
				Thread.onSpinWait();
			}
			assertThat(this.streams.created()).isZero();
		}
		finally {
			this.lock.unlock();
		}
		creator.join();
		assertThat(this.lock.isLocked()).as("given back").isFalse();
		assertThat(created.get().leased).isTrue();
		assertThat(this.streams.created()).isEqualTo(1);
	}

}
