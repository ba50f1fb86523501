package dev.gpucompute.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import dev.gpucompute.StreamPriority;

/**
 * The age of the most recent lease ({@link LeaseReports#youngestLease}), which decides whether a
 * full pool is stalled, and the stall verdict from it, on slots set by hand: no clock involved (the
 * times are made up, relative to a made-up now).
 */
class LeaseReportsTests {

	private static final long MS = 1_000_000;

	private final List<PoolSlot> all = new CopyOnWriteArrayList<>();

	private final LeaseReports reports = new LeaseReports(this.all, 100 * MS);

	private PoolSlot slot(String name, boolean leased, long acquiredAt) {
		PoolSlot slot = FakeStream.slot(name, StreamPriority.NORMAL);
		slot.leased = leased;
		if (acquiredAt >= 0) {
			PoolSlot.CURRENT.setRelease(slot, new Lease.Release(null, slot, acquiredAt, null, "worker"));
		}
		this.all.add(slot);
		return slot;
	}

	@Test
	void theYoungestLeaseIsTheMostRecentOfThoseHeld() {
		long now = 10_000 * MS;
		assertThat(this.reports.youngestLease(now)).as("none held").isEqualTo(Long.MAX_VALUE);
		slot("pool-1", true, now - 500 * MS);
		slot("pool-2", true, now - 150 * MS);
		// An idle stream whose last lease is still recorded does not count.
		slot("pool-3", false, now - 10 * MS);
		assertThat(this.reports.youngestLease(now)).isEqualTo(150 * MS);
		assertThat(this.reports.stallReason(2, 150 * MS, 1, 0, Long.MAX_VALUE))
			.startsWith("All 2 pooled streams have been leased for more than 100 ms")
			.contains("the most recent lease is 150 ms old")
			.contains("1 waiting now");
	}

	@Test
	void aLeaseBeingHandedOutIsTheYoungestOfAll() {
		long now = 10_000 * MS;
		slot("pool-1", true, now - 500 * MS);
		// Leased under the lock, its release not yet published.
		slot("pool-2", true, -1);
		assertThat(this.reports.youngestLease(now)).isZero();
		assertThat(this.reports.stallReason(2, 0, 3, 0, Long.MAX_VALUE)).as("not stalled").isNull();
	}

}
