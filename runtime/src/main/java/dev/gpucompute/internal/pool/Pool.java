package dev.gpucompute.internal.pool;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.locks.ReentrantLock;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPool.LeaseInfo;
import dev.gpucompute.StreamPool.PoolStats;
import dev.gpucompute.StreamPool.StreamLeases;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.internal.core.Capture;
import dev.gpucompute.internal.core.Captures;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.spi.DeviceBackend;

/**
 * The implementation of {@link StreamPool}: the lease and return paths, with the pool's lock. The
 * parts it delegates to own one job each: the {@link PoolLedger} (idle and leased streams, limits,
 * whether the pool stopped), the {@link WaitQueue} (waiting callers and the hand-off that serves
 * them), {@link PoolStreams} (creating and destroying the streams), {@link LeaseChecks} (requests
 * refused before the lock), {@link LeaseReports} (leaks, leases held, stalls) and
 * {@link PoolUtilization} (how busy the streams are).
 * <p>
 * Threading: thread-safe. One lock guards the ledger, the wait queue and the slots' plain fields;
 * whatever decides who gets a stream is decided under it in one go, and the backend (creating,
 * destroying a stream) and the listener are called outside it.
 */
public final class Pool implements StreamPool {

	private static final Logger log = LoggerFactory.getLogger(StreamPool.class);

	private final ContextState lifecycle;

	private final Streams streams;

	private final GpuListener listener;

	private final ScheduledExecutorService housekeeping;

	private final int minSize;

	private final Duration acquireTimeout;

	private final long leakThresholdNanos;

	/** Guards the ledger, the queue, the slots' plain fields and the created and destroyed counts. */
	private final ReentrantLock lock = new ReentrantLock();

	private final PoolLedger ledger;

	private final WaitQueue queue;

	private final PoolStreams slots;

	private final LeaseChecks checks;

	private final LeaseReports reports;

	private final PoolUtilization utilization;

	/**
	 * @param lifecycle the context's, checked by every acquisition
	 * @param backend creates and destroys the pool's streams
	 * @param streams makes the handles of the pooled streams, and knows the stream a thread works on
	 * @param listener told of leases acquired, released and timed out
	 * @param housekeeping runs the leak reports of leases held too long
	 * @param minSize streams created up front ({@link #fill()})
	 * @param maxSize most streams the pool creates
	 * @param acquireTimeout the default wait for a lease
	 * @param leakThreshold a lease held longer is reported; zero for off
	 * @param priorityLimits most streams leased at once per priority, by ordinal
	 */
	public Pool(ContextState lifecycle, DeviceBackend backend, Streams streams, GpuListener listener,
			ScheduledExecutorService housekeeping, int minSize, int maxSize, Duration acquireTimeout,
			Duration leakThreshold, int[] priorityLimits) {
		this.lifecycle = lifecycle;
		this.streams = streams;
		this.listener = listener;
		this.housekeeping = housekeeping;
		this.minSize = minSize;
		this.acquireTimeout = acquireTimeout;
		this.leakThresholdNanos = leakThreshold.toNanos();
		this.ledger = new PoolLedger(maxSize, priorityLimits);
		this.queue = new WaitQueue(this.lock, this.ledger);
		this.slots = new PoolStreams(backend, this.lock);
		this.checks = new LeaseChecks(lifecycle, streams, this.ledger);
		this.reports = new LeaseReports(this.slots.all(), this.leakThresholdNanos);
		this.utilization = new PoolUtilization(lifecycle, this.slots.all());
	}

	ContextState lifecycle() {
		return this.lifecycle;
	}

	Streams streams() {
		return this.streams;
	}

	/** Creates the up-front streams. */
	public void fill() {
		for (int i = 0; i < this.minSize; i++) {
			PoolSlot slot = this.slots.create(StreamPriority.NORMAL, false);
			this.lock.lock();
			try {
				this.ledger.addIdle(slot);
			}
			finally {
				this.lock.unlock();
			}
		}
	}

	@Override
	public StreamLease acquire() {
		return acquire(StreamPriority.NORMAL, this.acquireTimeout);
	}

	@Override
	public StreamLease acquire(Duration timeout) {
		return acquire(StreamPriority.NORMAL, timeout);
	}

	@Override
	public StreamLease acquire(StreamPriority priority) {
		return acquire(priority, this.acquireTimeout);
	}

	@Override
	public StreamLease acquire(StreamPriority priority, Duration timeout) {
		LeaseChecks.checkArguments(priority, timeout);
		this.checks.checkNested(priority, 1);
		// Clock reads cost tens of nanoseconds on some VMs: the wait is timed only when there is one.
		long start = 0;
		int p = priority.ordinal();
		PoolSlot slot = null;
		PoolSlot evicted = null;
		boolean create = false;
		PoolExhaustedException timedOut = null;
		this.lock.lock();
		try {
			this.ledger.checkOpen();
			if (!this.queue.mustQueue(p, 1)) {
				// The grant of WaitQueue for one stream, without a waiter to allocate.
				slot = this.ledger.takeIdle(p);
				if (slot == null) {
					create = true;
					if (!this.ledger.reserveNew()) {
						// At the maximum with only other-priority streams idle: replace one.
						evicted = this.ledger.evictFor(p);
					}
				}
				this.ledger.book(p, 1);
			}
			else {
				start = System.nanoTime();
				WaitQueue.Waiter waiter = this.queue.await(p, 1, timeout);
				if (waiter.slots.isEmpty()) {
					create = true;
					evicted = waiter.evicted.isEmpty() ? null : waiter.evicted.get(0);
				}
				else {
					slot = waiter.slots.get(0);
				}
			}
		}
		catch (PoolExhaustedException ex) {
			timedOut = ex;
		}
		finally {
			this.lock.unlock();
		}
		if (timedOut != null) {
			throw timedOut(timedOut, start);
		}
		// Without a stream to create, one was taken: idle, or granted to the waiter.
		PoolSlot leased = create ? createOrGiveBack(priority, evicted) : Objects.requireNonNull(slot);
		return lease(leased, start);
	}

	/** Tells the listener of a timed-out acquisition (outside the lock) and returns the exception to throw. */
	private PoolExhaustedException timedOut(PoolExhaustedException ex, long start) {
		this.listener.leaseTimedOut(System.nanoTime() - start);
		return ex;
	}

	/**
	 * Rejects a group of {@code count} streams of {@code priority} that the pool could never lease at
	 * once; {@link dev.gpucompute.GpuLauncher#parallel(java.util.List)} checks its group with it before forking.
	 */
	public void checkGroupSize(StreamPriority priority, int count) {
		this.checks.checkGroupSize(priority, count);
	}

	private Lease lease(PoolSlot slot, long start) {
		long now = System.nanoTime();
		this.listener.leaseAcquired((start == 0) ? 0 : now - start);
		Lease lease = new Lease(this, slot, now, Leaks.site(this.leakThresholdNanos > 0, "Stream lease"));
		PoolSlot.CURRENT.setRelease(slot, lease.release());
		if (this.leakThresholdNanos > 0) {
			this.reports.watch(lease, slot, this.housekeeping);
		}
		return lease;
	}

	@Override
	public StreamLeases acquireAll(int count) {
		return acquireAll(StreamPriority.NORMAL, count, this.acquireTimeout);
	}

	@Override
	public StreamLeases acquireAll(int count, Duration timeout) {
		return acquireAll(StreamPriority.NORMAL, count, timeout);
	}

	@Override
	public StreamLeases acquireAll(StreamPriority priority, int count) {
		return acquireAll(priority, count, this.acquireTimeout);
	}

	@Override
	public StreamLeases acquireAll(StreamPriority priority, int count, Duration timeout) {
		LeaseChecks.checkArguments(priority, timeout);
		this.checks.checkGroupSize(priority, count);
		this.checks.checkNested(priority, count);
		int p = priority.ordinal();
		long start = System.nanoTime();
		WaitQueue.Waiter waiter = null;
		PoolExhaustedException timedOut = null;
		this.lock.lock();
		try {
			this.ledger.checkOpen();
			waiter = this.queue.mustQueue(p, count) ? this.queue.await(p, count, timeout) : this.queue.grantNow(p, count);
		}
		catch (PoolExhaustedException ex) {
			timedOut = ex;
		}
		finally {
			this.lock.unlock();
		}
		if (timedOut != null) {
			throw timedOut(timedOut, start);
		}
		// Granted or waited for: without a timeout the waiter is set.
		List<PoolSlot> taken = Objects.requireNonNull(waiter).slots;
		for (PoolSlot slot : waiter.evicted) {
			this.slots.destroy(slot);
		}
		int created = 0;
		try {
			for (; created < waiter.creates; created++) {
				taken.add(this.slots.create(priority, true));
			}
		}
		catch (RuntimeException ex) {
			cancel(p, count, taken, waiter.creates - created);
			throw ex;
		}
		List<StreamLease> leases = new ArrayList<>(count);
		for (PoolSlot slot : taken) {
			leases.add(lease(slot, start));
		}
		return new Leases(leases);
	}

	/** Creates the stream an acquisition was granted, replacing {@code evicted}; undoes the grant when that fails. */
	private PoolSlot createOrGiveBack(StreamPriority priority, @Nullable PoolSlot evicted) {
		if (evicted != null) {
			this.slots.destroy(evicted);
		}
		try {
			return this.slots.create(priority, true);
		}
		catch (RuntimeException ex) {
			cancel(priority.ordinal(), 1, List.of(), 1);
			throw ex;
		}
	}

	/** Undoes an acquisition whose stream creation failed, and serves the waiters it held back. */
	private void cancel(int p, int count, List<PoolSlot> taken, int notCreated) {
		this.lock.lock();
		try {
			this.ledger.cancel(p, count, taken, notCreated);
			this.queue.serve();
		}
		finally {
			this.lock.unlock();
		}
	}

	/**
	 * Returns a lease's stream, called by its close or by the leak cleaner; false, with nothing
	 * done, when that lease was already closed.
	 */
	boolean release(Lease.Release lease, long heldNanos) {
		PoolSlot slot = lease.slot();
		Captures captures = this.lifecycle.captures();
		Capture capture = captures.any() ? captures.of(slot.stream) : null;
		if (capture != null) {
			return releaseAfter(capture, lease, heldNanos);
		}
		boolean discard;
		this.lock.lock();
		try {
			if (!lease.markClosed()) {
				return false;
			}
			discard = returnSlot(slot, heldNanos);
		}
		finally {
			this.lock.unlock();
		}
		if (discard) {
			this.slots.destroy(slot);
		}
		this.listener.leaseReleased(heldNanos);
		return true;
	}

	/**
	 * Closes a lease whose stream takes part in a capture (it joined one, say as a branch of a
	 * stream-parallel group): the lease is closed now, the stream goes back to the pool only when the
	 * capture is over, so that nobody else's work is recorded into the graph.
	 */
	private boolean releaseAfter(Capture capture, Lease.Release lease, long heldNanos) {
		PoolSlot slot = lease.slot();
		this.lock.lock();
		try {
			if (!lease.markClosed()) {
				return false;
			}
		}
		finally {
			this.lock.unlock();
		}
		capture.atEnd(() -> {
			boolean discard;
			this.lock.lock();
			try {
				discard = returnSlot(slot, heldNanos);
			}
			finally {
				this.lock.unlock();
			}
			if (discard) {
				this.slots.destroy(slot);
			}
		});
		this.listener.leaseReleased(heldNanos);
		return true;
	}

	/**
	 * Puts a closed lease's stream back for the next holder; with the lock held. A stream its backend
	 * can no longer vouch for ({@link dev.gpucompute.spi.NativeStream#isReusable()} false: on CUDA, one
	 * the driver may still capture) is taken out of the pool instead, making room for a new one.
	 * @return whether the caller must destroy the stream, once it has released the lock
	 */
	private boolean returnSlot(PoolSlot slot, long heldNanos) {
		// Before anyone else can lease it: the next holder must never be told of this holder's failures.
		slot.stream.discardFailures();
		PoolSlot.CURRENT.setRelease(slot, null);
		slot.leased = false;
		slot.leases++;
		slot.heldNanos += heldNanos;
		boolean discard = false;
		if (slot.stream.isReusable()) {
			// Once closed, the context's destroyAll owns every stream; a late return only leaves it out of the idle queue.
			this.ledger.returned(slot);
		}
		else {
			discard = this.ledger.discarded(slot);
			if (discard) {
				log.warn("Pooled stream {} is destroyed instead of going back to the pool: its backend can no longer "
						+ "vouch for it", slot.stream.name());
			}
		}
		if (!this.ledger.isClosed() && this.queue.pending() > 0) {
			this.queue.serve();
		}
		return discard;
	}

	/** Refuses new leases and wakes every waiter (they get a {@link ContextClosedException}). */
	public void stopAccepting() {
		this.lock.lock();
		try {
			this.ledger.close();
			this.queue.wakeAll();
		}
		finally {
			this.lock.unlock();
		}
	}

	/** Destroys every pooled stream, leased or not. Called once by the context after draining. */
	public void destroyAll() {
		List<PoolSlot> all;
		int leased = 0;
		this.lock.lock();
		try {
			all = new ArrayList<>(this.slots.all());
			for (PoolSlot slot : all) {
				if (slot.leased) {
					leased++;
				}
			}
			this.ledger.clear();
		}
		finally {
			this.lock.unlock();
		}
		for (PoolSlot slot : all) {
			this.slots.destroy(slot);
		}
		if (leased > 0) {
			log.warn("{} pooled streams were still leased at context close; their leases are now stale", leased);
		}
	}

	/** Samples whether each pooled stream has work in flight; an exponential average per stream. */
	public void sampleBusy(double alpha) {
		this.utilization.sample(alpha);
	}

	/**
	 * Whether any pooled stream, leased or idle, has work in flight now (a query of each; a stream
	 * that cannot be queried counts as idle). For the kernel-load report; not for the launch path.
	 */
	public boolean anyBusy() {
		return this.utilization.anyBusy();
	}

	@Override
	public List<LeaseInfo> leases() {
		return this.reports.leases();
	}

	@Override
	public @Nullable String stallReason() {
		if (this.leakThresholdNanos <= 0) {
			return null;
		}
		long now = System.nanoTime();
		long youngest;
		int pendingNow;
		long timeoutsNow;
		long sinceTimeout;
		this.lock.lock();
		try {
			if (this.ledger.isClosed() || this.ledger.active() < this.ledger.maxSize()) {
				return null;
			}
			youngest = this.reports.youngestLease(now);
			pendingNow = this.queue.pending();
			timeoutsNow = this.queue.timeouts();
			sinceTimeout = (timeoutsNow > 0) ? now - this.queue.lastTimeoutAt() : Long.MAX_VALUE;
		}
		finally {
			this.lock.unlock();
		}
		return this.reports.stallReason(this.ledger.maxSize(), youngest, pendingNow, timeoutsNow, sinceTimeout);
	}

	@Override
	public Duration leakDetectionThreshold() {
		return Duration.ofNanos(this.leakThresholdNanos);
	}

	@Override
	public PoolStats stats() {
		List<PoolStats.StreamStats> streams = new ArrayList<>();
		double utilization = 0;
		this.lock.lock();
		try {
			for (PoolSlot slot : this.slots.all()) {
				streams.add(new PoolStats.StreamStats(slot.stream.name(), slot.priority, slot.leased, slot.leases,
						slot.heldNanos, slot.busyShare));
				utilization += slot.busyShare;
			}
			utilization = streams.isEmpty() ? 0 : utilization / streams.size();
			return new PoolStats(this.ledger.total(), this.ledger.active(), this.ledger.idleCount(), this.queue.pending(),
					this.minSize, this.ledger.maxSize(), this.slots.created(), this.slots.destroyed(),
					this.ledger.acquisitions(), this.queue.timeouts(), this.ledger.highWaterMark(),
					this.reports.leaksDetected(), utilization, List.copyOf(streams));
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public int active() {
		this.lock.lock();
		try {
			return this.ledger.active();
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public int maxSize() {
		return this.ledger.maxSize();
	}

	@Override
	public int priorityLimit(StreamPriority priority) {
		return this.ledger.limit(priority.ordinal());
	}

	@Override
	public int minSize() {
		return this.minSize;
	}

	@Override
	public Duration acquireTimeout() {
		return this.acquireTimeout;
	}

}
