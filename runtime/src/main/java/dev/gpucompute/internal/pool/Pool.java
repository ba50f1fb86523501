package dev.gpucompute.internal.pool;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuListener;
import dev.gpucompute.LeaseInfo;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.PoolStats;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamLeases;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.core.Leaks;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.spi.DeviceBackend;

/** The implementation of {@link StreamPool}. */
public final class Pool implements StreamPool {

	private static final Logger log = LoggerFactory.getLogger(StreamPool.class);

	private static final int PRIORITIES = StreamPriority.values().length;

	/**
	 * A caller waiting for {@code count} streams of one priority. The thread that makes streams
	 * available grants them under the lock (idle streams, or the right to create or to replace one)
	 * and wakes this waiter alone; the waiter then creates what it was granted outside the lock.
	 */
	private static final class Waiter {

		final int priority;

		final int count;

		final Condition granted;

		// Guarded by the pool lock.
		boolean served;

		final List<PoolSlot> slots = new ArrayList<>(1);

		final List<PoolSlot> evicted = new ArrayList<>(0);

		int creates;

		Waiter(int priority, int count, Condition granted) {
			this.priority = priority;
			this.count = count;
			this.granted = granted;
		}

	}

	private final ContextState lifecycle;

	private final Streams streams;

	private final GpuListener listener;

	private final ScheduledExecutorService housekeeping;

	private final int minSize;

	private final int maxSize;

	private final Duration acquireTimeout;

	private final long leakThresholdNanos;

	private final ReentrantLock lock = new ReentrantLock();

	@SuppressWarnings("unchecked")
	private final ArrayDeque<PoolSlot>[] idle = new ArrayDeque[PRIORITIES];

	/** Waiting callers by priority, first come first; guarded by lock. */
	@SuppressWarnings("unchecked")
	private final ArrayDeque<Waiter>[] waiters = new ArrayDeque[PRIORITIES];

	/** Most streams leased at once per priority (the pool's maximum when unlimited). */
	private final int[] limits = new int[PRIORITIES];

	/** Streams leased now per priority; guarded by lock. */
	private final int[] leasedBy = new int[PRIORITIES];

	private final PoolStreams slots;

	private final LeaseChecks checks;

	private final LeaseReports reports;

	private final PoolUtilization utilization;

	// Guarded by lock.
	private int total;

	private int active;

	private int pending;

	private int highWaterMark;

	private long acquisitions;

	private long timeouts;

	/** {@link System#nanoTime()} of the last acquisition that timed out; meaningful once {@code timeouts > 0}. */
	private long lastTimeoutAt;

	private boolean closed;

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
		this.maxSize = maxSize;
		this.acquireTimeout = acquireTimeout;
		this.leakThresholdNanos = leakThreshold.toNanos();
		this.slots = new PoolStreams(backend, this.lock);
		this.reports = new LeaseReports(this.slots.all(), this.leakThresholdNanos);
		this.utilization = new PoolUtilization(lifecycle, this.slots.all());
		for (int i = 0; i < PRIORITIES; i++) {
			this.idle[i] = new ArrayDeque<>(maxSize);
			this.waiters[i] = new ArrayDeque<>();
			this.limits[i] = Math.min(maxSize, priorityLimits[i]);
		}
		this.checks = new LeaseChecks(lifecycle, streams, maxSize, this.limits);
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
				this.total++;
				this.idle[StreamPriority.NORMAL.ordinal()].addLast(slot);
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

	/**
	 * Leases a stream of the given priority.
	 * @param timeout longest wait for a free stream; zero means do not wait
	 * @throws PoolExhaustedException when none became free in time
	 * @throws ContextClosedException when the context is closing or closed
	 */
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
			if (this.closed) {
				throw closedError();
			}
			if (!mustQueue(p, 1)) {
				slot = this.idle[p].pollLast();
				if (slot != null) {
					slot.leased = true;
				}
				else if (this.total < this.maxSize) {
					this.total++;
					create = true;
				}
				else {
					// At the maximum with only other-priority streams idle: replace one.
					evicted = this.idle[PRIORITIES - 1 - p].pollFirst();
					create = true;
				}
				countLeased(p, 1);
			}
			else {
				start = System.nanoTime();
				Waiter waiter = await(p, 1, timeout, start);
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
		PoolSlot leased = create ? createOrGiveBack(priority, evicted) : slot;
		return lease(leased, start);
	}

	/**
	 * Whether a caller asking for {@code count} streams of priority {@code p} must wait, with the
	 * lock held: when a caller of its priority waits already, when a higher-priority caller waits
	 * for streams, or when what it asks for is not there.
	 */
	private boolean mustQueue(int p, int count) {
		if (this.pending > 0) {
			if (!this.waiters[p].isEmpty()) {
				return true;
			}
			for (int q = PRIORITIES - 1; q > p; q--) {
				Waiter head = this.waiters[q].peekFirst();
				// Waiters are served whenever they can be, so one whose own limit has room waits for streams.
				if (head != null && classRoom(q) >= head.count) {
					return true;
				}
			}
		}
		return classRoom(p) < count || obtainable(p) < count;
	}

	private int classRoom(int p) {
		return this.limits[p] - this.leasedBy[p];
	}

	/** Streams of priority {@code p} that could be leased now: idle ones, new ones, replaced ones. */
	private int obtainable(int p) {
		return this.idle[p].size() + (this.maxSize - this.total) + this.idle[PRIORITIES - 1 - p].size();
	}

	/**
	 * Queues the caller and waits, with the lock held, until its streams are granted.
	 * @return the waiter with its grant
	 * @throws PoolExhaustedException at the timeout (the caller tells the listener, outside the lock)
	 * @throws ContextClosedException when the pool stops
	 */
	private Waiter await(int p, int count, Duration timeout, long start) {
		Waiter waiter = new Waiter(p, count, this.lock.newCondition());
		this.waiters[p].addLast(waiter);
		this.pending++;
		long remaining = timeout.toNanos();
		try {
			while (!waiter.served) {
				if (this.closed) {
					throw closedError();
				}
				if (remaining <= 0) {
					this.timeouts++;
					this.lastTimeoutAt = System.nanoTime();
					// Told to the listener by the caller, outside the lock.
					throw new PoolExhaustedException(timeout, this.active, this.maxSize, this.pending);
				}
				try {
					remaining = waiter.granted.awaitNanos(remaining);
				}
				catch (InterruptedException ex) {
					if (waiter.served) {
						// Granted meanwhile: the caller gets its streams and its interrupt.
						Thread.currentThread().interrupt();
						break;
					}
					Thread.currentThread().interrupt();
					throw new GpuException("Interrupted while waiting for a pooled stream", ex);
				}
			}
			return waiter;
		}
		finally {
			this.pending--;
			if (!waiter.served) {
				this.waiters[p].remove(waiter);
				// A waiter that leaves may have held back the ones behind it.
				serveWaiters();
			}
		}
	}

	/**
	 * Grants streams to waiters in order, with the lock held: higher priorities first, first come
	 * first within a priority. A head held back by its priority's limit lets the other priority go;
	 * a head held back for want of streams stops everyone behind it.
	 */
	private void serveWaiters() {
		for (int p = PRIORITIES - 1; p >= 0; p--) {
			ArrayDeque<Waiter> queue = this.waiters[p];
			Waiter head;
			while ((head = queue.peekFirst()) != null) {
				if (classRoom(p) < head.count) {
					break;
				}
				if (obtainable(p) < head.count) {
					return;
				}
				queue.pollFirst();
				grant(head);
				head.granted.signal();
			}
		}
	}

	/** Books streams for a waiter, with the lock held; what must be created is created by the waiter. */
	private void grant(Waiter waiter) {
		int p = waiter.priority;
		for (int i = 0; i < waiter.count; i++) {
			PoolSlot slot = this.idle[p].pollLast();
			if (slot != null) {
				slot.leased = true;
				waiter.slots.add(slot);
			}
			else if (this.total < this.maxSize) {
				this.total++;
				waiter.creates++;
			}
			else {
				waiter.evicted.add(this.idle[PRIORITIES - 1 - p].pollFirst());
				waiter.creates++;
			}
		}
		waiter.served = true;
		countLeased(p, waiter.count);
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

	/**
	 * Leases {@code count} normal-priority streams as one unit, waiting up to the pool's acquire
	 * timeout; close the group to return them all (try-with-resources). See
	 * {@link #acquireAll(StreamPriority, int, Duration)}.
	 */
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

	/**
	 * Leases {@code count} streams of the given priority as one unit: either all of them or, after
	 * {@code timeout}, none. Callers that need several streams at once (stream-parallel groups) use
	 * this instead of acquiring one by one, which could leave two callers each holding part of the
	 * pool and waiting for the other's part until both time out. The group is a {@code List} of the
	 * leases that closes them all ({@link StreamLeases#close()}).
	 * @throws IllegalArgumentException when {@code count} is below 1
	 * @throws PoolTooSmallException at once, leasing nothing, when {@code count} exceeds what the pool
	 * may ever lease at once at {@code priority}: its maximum size or the priority's limit
	 * @throws PoolExhaustedException when the streams did not become free in time
	 */
	@Override
	public StreamLeases acquireAll(StreamPriority priority, int count, Duration timeout) {
		LeaseChecks.checkArguments(priority, timeout);
		this.checks.checkGroupSize(priority, count);
		this.checks.checkNested(priority, count);
		int p = priority.ordinal();
		long start = System.nanoTime();
		Waiter waiter = null;
		PoolExhaustedException timedOut = null;
		this.lock.lock();
		try {
			if (this.closed) {
				throw closedError();
			}
			if (!mustQueue(p, count)) {
				waiter = new Waiter(p, count, null);
				grant(waiter);
			}
			else {
				waiter = await(p, count, timeout, start);
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
		List<PoolSlot> taken = waiter.slots;
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
			giveBack(taken, waiter.creates - created, p, count);
			throw ex;
		}
		List<StreamLease> leases = new ArrayList<>(count);
		for (PoolSlot slot : taken) {
			leases.add(lease(slot, start));
		}
		return new Leases(leases);
	}

	/** Undoes a group acquisition whose stream creation failed. */
	private void giveBack(List<PoolSlot> taken, int notCreated, int p, int count) {
		this.lock.lock();
		try {
			for (PoolSlot slot : taken) {
				slot.leased = false;
				this.idle[slot.priority.ordinal()].addLast(slot);
			}
			this.total -= notCreated;
			this.active -= count;
			this.leasedBy[p] -= count;
			serveWaiters();
		}
		finally {
			this.lock.unlock();
		}
	}

	/** Books {@code count} granted leases of priority {@code p}, with the lock held. */
	private void countLeased(int p, int count) {
		this.leasedBy[p] += count;
		this.active += count;
		this.acquisitions += count;
		if (this.active > this.highWaterMark) {
			this.highWaterMark = this.active;
		}
	}

	private PoolSlot createOrGiveBack(StreamPriority priority, PoolSlot evicted) {
		if (evicted != null) {
			this.slots.destroy(evicted);
		}
		try {
			return this.slots.create(priority, true);
		}
		catch (RuntimeException ex) {
			this.lock.lock();
			try {
				this.total--;
				this.active--;
				this.leasedBy[priority.ordinal()]--;
				serveWaiters();
			}
			finally {
				this.lock.unlock();
			}
			throw ex;
		}
	}

	/**
	 * Returns a lease's stream, called by its close or by the leak cleaner; false, with nothing
	 * done, when that lease was already closed.
	 */
	boolean release(Lease.Release lease, long heldNanos) {
		PoolSlot slot = lease.slot();
		this.lock.lock();
		try {
			if (!lease.markClosed()) {
				return false;
			}
			// Before anyone else can lease it: the next holder must never be told of this holder's failures.
			slot.stream.discardFailures();
			PoolSlot.CURRENT.setRelease(slot, null);
			slot.leased = false;
			slot.leases++;
			slot.heldNanos += heldNanos;
			this.active--;
			this.leasedBy[slot.priority.ordinal()]--;
			// Once closed, the context's destroyAll owns every stream; a late return only leaves it out of the idle queue.
			if (!this.closed) {
				this.idle[slot.priority.ordinal()].addLast(slot);
				if (this.pending > 0) {
					serveWaiters();
				}
			}
		}
		finally {
			this.lock.unlock();
		}
		this.listener.leaseReleased(heldNanos);
		return true;
	}

	private ContextClosedException closedError() {
		return new ContextClosedException("The stream pool is shut down: its GPU context is closing or closed");
	}

	/** Refuses new leases and wakes every waiter (they get a {@link ContextClosedException}). */
	public void stopAccepting() {
		this.lock.lock();
		try {
			this.closed = true;
			for (ArrayDeque<Waiter> queue : this.waiters) {
				for (Waiter waiter : queue) {
					waiter.granted.signal();
				}
			}
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
			for (ArrayDeque<PoolSlot> queue : this.idle) {
				queue.clear();
			}
			this.total = 0;
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

	/**
	 * The leases held now, the oldest first: stream, time held, the thread that acquired it and,
	 * with leak detection on, where. What to look at when the pool runs dry.
	 */
	@Override
	public List<LeaseInfo> leases() {
		return this.reports.leases();
	}

	/**
	 * Why the pool is stalled, or {@code null} when it is not. Stalled means that leases are not
	 * coming back: every stream the pool may hold ({@code maxSize}) is leased, the most recent lease
	 * is older than the leak-detection threshold, and callers are waiting for a stream or one timed
	 * out within that threshold. A busy pool, whose leases come and go however many callers wait, is
	 * never stalled. Without leak detection (threshold zero) there is no threshold to judge by, and
	 * this answers {@code null}.
	 */
	@Override
	public String stallReason() {
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
			if (this.closed || this.active < this.maxSize) {
				return null;
			}
			youngest = this.reports.youngestLease(now);
			pendingNow = this.pending;
			timeoutsNow = this.timeouts;
			sinceTimeout = (this.timeouts > 0) ? now - this.lastTimeoutAt : Long.MAX_VALUE;
		}
		finally {
			this.lock.unlock();
		}
		return this.reports.stallReason(this.maxSize, youngest, pendingNow, timeoutsNow, sinceTimeout);
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
			int idleNow = 0;
			for (ArrayDeque<PoolSlot> queue : this.idle) {
				idleNow += queue.size();
			}
			return new PoolStats(this.total, this.active, idleNow, this.pending, this.minSize, this.maxSize, this.slots.created(),
					this.slots.destroyed(), this.acquisitions, this.timeouts, this.highWaterMark, this.reports.leaksDetected(),
					utilization, List.copyOf(streams));
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public int active() {
		this.lock.lock();
		try {
			return this.active;
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public int maxSize() {
		return this.maxSize;
	}

	/**
	 * Most streams leased at once at {@code priority}: its limit ({@code priorityLimit} of the
	 * builder, {@code gpu.streams.priority-limits}), or the pool's maximum when it has none.
	 */
	@Override
	public int priorityLimit(StreamPriority priority) {
		return this.limits[priority.ordinal()];
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
