package dev.gpucompute.internal.pool;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.LeaseInfo;
import dev.gpucompute.internal.core.Leaks;

/**
 * What to look at when a {@link StreamPool} runs dry: leak detection (a lease held longer than the
 * leak-detection threshold logs its acquisition site and is counted), the leases held now, and why
 * the pool is stalled. Thread-safe; its pool owns it and hands it the figures it keeps under its lock.
 */
final class LeaseReports {

	// The pool's logger: the leak warning is the pool speaking, and is filtered by that name.
	private static final Logger log = LoggerFactory.getLogger(StreamPool.class);

	/** Every stream of the pool, leased or idle; only read here. */
	private final List<PoolSlot> all;

	private final long leakThresholdNanos;

	private final AtomicLong leaksDetected = new AtomicLong();

	LeaseReports(List<PoolSlot> all, long leakThresholdNanos) {
		this.all = all;
		this.leakThresholdNanos = leakThresholdNanos;
	}

	/** Reports {@code lease} as a possible leak if it is still held after the threshold; leak detection is on. */
	void watch(Lease lease, PoolSlot slot, ScheduledExecutorService housekeeping) {
		// The task must not hold the lease, or the leak cleaner could never see it unreachable.
		Throwable site = lease.site();
		lease.leakTask(housekeeping.schedule(() -> reportLeak(site, slot), this.leakThresholdNanos,
				TimeUnit.NANOSECONDS));
	}

	private void reportLeak(@Nullable Throwable site, PoolSlot slot) {
		this.leaksDetected.incrementAndGet();
		log.warn("Stream lease of {} held for more than {} ms; possible leak. Acquired at:", slot.stream.name(),
				TimeUnit.NANOSECONDS.toMillis(this.leakThresholdNanos), site);
	}

	/** Leases reported as possible leaks so far. */
	long leaksDetected() {
		return this.leaksDetected.get();
	}

	/** See {@link StreamPool#leases()}. */
	List<LeaseInfo> leases() {
		long now = System.nanoTime();
		List<LeaseInfo> leases = new ArrayList<>();
		for (PoolSlot slot : this.all) {
			Lease.Release lease = slot.current();
			if (lease != null) {
				leases.add(new LeaseInfo(slot.stream.name(), slot.priority, Duration.ofNanos(now - lease.acquiredAt()),
						lease.thread(), site(lease.acquisitionSite())));
			}
		}
		leases.sort(Comparator.comparing(LeaseInfo::held).reversed());
		return leases;
	}

	/** The frames of an acquisition site from the pool's caller on (the pool's and the site's own frames dropped). */
	private static List<StackTraceElement> site(@Nullable Throwable site) {
		if (site == null) {
			return List.of();
		}
		StackTraceElement[] frames = site.getStackTrace();
		int first = 0;
		while (first < frames.length && (frames[first].getClassName().equals(Leaks.class.getName())
				|| frames[first].getClassName().equals(Pool.class.getName()))) {
			first++;
		}
		return List.of(Arrays.copyOfRange(frames, first, frames.length));
	}

	/**
	 * Nanoseconds from the grant of the most recent lease held now to {@code now}, {@link Long#MAX_VALUE}
	 * when none is held; called with the pool's lock held, which guards the slots' leased flags.
	 */
	long youngestLease(long now) {
		long youngest = Long.MAX_VALUE;
		for (PoolSlot slot : this.all) {
			if (slot.leased) {
				Lease.Release lease = slot.current();
				// A lease being handed out has no release yet: it is the youngest of all.
				youngest = Math.min(youngest, (lease != null) ? now - lease.acquiredAt() : 0);
			}
		}
		return youngest;
	}

	/**
	 * Why a pool whose every stream is leased is stalled, or {@code null} when it is not (see
	 * {@link StreamPool#stallReason()}), from the pool's figures taken under its lock; leak detection
	 * is on.
	 * @param maxSize the pool's maximum, all of it leased
	 * @param youngest nanoseconds since the most recent lease was granted
	 * @param pendingNow callers waiting for a stream
	 * @param timeoutsNow acquisitions that timed out so far
	 * @param sinceTimeout nanoseconds since the last of them ({@link Long#MAX_VALUE} when none did)
	 */
	@Nullable String stallReason(int maxSize, long youngest, int pendingNow, long timeoutsNow, long sinceTimeout) {
		if (youngest < this.leakThresholdNanos || (pendingNow == 0 && sinceTimeout > this.leakThresholdNanos)) {
			return null;
		}
		StringBuilder reason = new StringBuilder("All ").append(maxSize)
			.append(" pooled streams have been leased for more than ")
			.append(TimeUnit.NANOSECONDS.toMillis(this.leakThresholdNanos))
			.append(" ms (the leak-detection threshold; the most recent lease is ")
			.append(TimeUnit.NANOSECONDS.toMillis(youngest))
			.append(" ms old) while callers wait for one (");
		if (pendingNow > 0) {
			reason.append(pendingNow).append(" waiting now");
		}
		if (timeoutsNow > 0 && sinceTimeout <= this.leakThresholdNanos) {
			reason.append((pendingNow > 0) ? ", " : "")
				.append("the last acquisition timed out ")
				.append(TimeUnit.NANOSECONDS.toMillis(sinceTimeout))
				.append(" ms ago");
		}
		return reason.append("): leases are not being returned; their acquisition sites are logged and listed by "
				+ "StreamPool.leases()").toString();
	}

}
