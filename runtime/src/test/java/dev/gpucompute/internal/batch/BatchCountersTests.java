package dev.gpucompute.internal.batch;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import dev.gpucompute.batch.GpuBatcher.BatcherStats;

/**
 * The batcher's totals: each booking lands in its own figure of {@link BatcherStats} (the record has
 * nine counts of the same type side by side, easy to pass in the wrong order), and a snapshot is a
 * copy that later bookings leave alone.
 */
class BatchCountersTests {

	private final BatchCounters counters = new BatchCounters();

	@Test
	void eachBookingLandsInItsOwnFigure() {
		// Distinct amounts per figure, so that two figures swapped or merged show.
		for (int i = 0; i < 11; i++) {
			this.counters.submitted();
		}
		this.counters.rejected();
		this.counters.rejected();
		this.counters.expired(3);
		this.counters.cancelled(4);
		this.counters.abandoned(5);
		this.counters.dispatched(6);
		this.counters.dispatched(1);
		this.counters.completed(7, 8);
		this.counters.completed(0, 1);

		BatcherStats stats = this.counters.snapshot("b", 9, 10, 32, 1000);

		assertThat(stats.name()).isEqualTo("b");
		assertThat(stats.queued()).isEqualTo(9);
		assertThat(stats.runningBatches()).isEqualTo(10);
		assertThat(stats.submitted()).isEqualTo(11);
		assertThat(stats.rejected()).isEqualTo(2);
		assertThat(stats.expired()).isEqualTo(3);
		assertThat(stats.cancelled()).isEqualTo(4);
		assertThat(stats.abandoned()).isEqualTo(5);
		assertThat(stats.batches()).isEqualTo(2);
		assertThat(stats.dispatched()).isEqualTo(7);
		assertThat(stats.succeeded()).isEqualTo(7);
		assertThat(stats.failed()).isEqualTo(9);
		assertThat(stats.maxBatchSize()).isEqualTo(32);
		assertThat(stats.maxQueued()).isEqualTo(1000);
	}

	@Test
	void aSnapshotIsACopyThatLaterBookingsLeaveAlone() {
		BatcherStats before = this.counters.snapshot("b", 0, 0, 8, 16);
		assertThat(before).isEqualTo(new BatcherStats("b", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 16));

		this.counters.submitted();
		this.counters.dispatched(1);
		this.counters.completed(1, 0);

		assertThat(before.submitted()).isZero();
		assertThat(this.counters.snapshot("b", 0, 0, 8, 16))
			.isEqualTo(new BatcherStats("b", 0, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0, 8, 16));
	}

}
