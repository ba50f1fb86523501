package dev.gpucompute.internal.pool;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.spi.DeviceBackend;

/**
 * The streams of a {@link Pool} as device resources: creates them through the backend (named
 * {@code pool-N}, with {@code -high} for high priority), destroys them, keeps the list of every live
 * one (leased or idle) that the reports, the utilisation sample and the statistics read, and counts
 * those created and destroyed. Whether a stream is idle or leased is the {@link PoolLedger}'s
 * business; this class only makes and unmakes them.
 * <p>
 * Threading: thread-safe. The backend is called outside the pool's lock (creating a stream may take
 * a while, and other callers must not wait for it); the list is copy-on-write and read without a
 * lock; a new slot's leased flag and the created and destroyed counts are written under the pool's
 * lock, given at construction, which {@link Pool#stats()} holds to read them.
 */
final class PoolStreams {

	private static final Logger log = LoggerFactory.getLogger(StreamPool.class);

	private final DeviceBackend backend;

	private final ReentrantLock lock;

	private final List<PoolSlot> all = new CopyOnWriteArrayList<>();

	private final AtomicInteger names = new AtomicInteger();

	// Guarded by lock.
	private long created;

	private long destroyed;

	/**
	 * @param backend creates the streams
	 * @param lock the pool's lock, which guards the counts and the slots' leased flags
	 */
	PoolStreams(DeviceBackend backend, ReentrantLock lock) {
		this.backend = backend;
		this.lock = lock;
	}

	/** Every live stream of the pool, leased or idle; a copy-on-write list, read without a lock. */
	List<PoolSlot> all() {
		return this.all;
	}

	/**
	 * Creates a stream of {@code priority}, outside the pool's lock.
	 * @param leased whether it is created for a caller (else it starts idle)
	 * @throws RuntimeException what the backend throws; nothing is counted then
	 */
	PoolSlot create(StreamPriority priority, boolean leased) {
		String name = "pool-" + this.names.incrementAndGet() + ((priority == StreamPriority.HIGH) ? "-high" : "");
		PoolSlot slot = new PoolSlot(this.backend.createStream(priority, name), priority);
		this.all.add(slot);
		this.lock.lock();
		try {
			slot.leased = leased;
			this.created++;
		}
		finally {
			this.lock.unlock();
		}
		return slot;
	}

	/**
	 * Destroys a stream that is out of the ledger's books (evicted, or at the context's close),
	 * outside the pool's lock; handles still pointing at it see it destroyed. A failure is logged,
	 * not thrown: the stream is gone from the pool either way.
	 */
	void destroy(PoolSlot slot) {
		slot.destroyed = true;
		this.all.remove(slot);
		try {
			slot.stream.destroy();
		}
		catch (RuntimeException ex) {
			log.warn("Destroying pooled stream {} failed", slot.stream.name(), ex);
		}
		this.lock.lock();
		try {
			this.destroyed++;
		}
		finally {
			this.lock.unlock();
		}
	}

	/** Streams created so far; read with the pool's lock held. */
	long created() {
		return this.created;
	}

	/** Streams destroyed so far; read with the pool's lock held. */
	long destroyed() {
		return this.destroyed;
	}

}
