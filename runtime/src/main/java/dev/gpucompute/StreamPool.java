package dev.gpucompute;

import dev.gpucompute.listener.GpuListener;
import java.time.Duration;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A bounded pool of non-blocking streams with exclusive leases. {@code minSize} streams are
 * created when the context opens; more are created on demand up to {@code maxSize}; beyond that,
 * callers wait up to the acquire timeout and then get a {@link PoolExhaustedException}.
 *
 * <p>States of a stream: idle (in the pool) → leased (owned by one {@link StreamLease}) → idle
 * again on {@link StreamLease#close()}; destroyed when the context closes, or when a stream of the
 * other priority is needed and the pool is at its maximum. Idle streams are handed out
 * last-in-first-out so the most recently used, warmest streams go first.
 *
 * <p>Waiting callers are served in order: every {@link StreamPriority#HIGH} waiter before any
 * {@link StreamPriority#NORMAL} one, first come first served within a priority, and nobody takes a
 * stream while a caller ahead of it waits for one (a released stream is handed to the first waiter,
 * not to whoever asks next). A priority may have a limit of its own ({@code priorityLimit}): at most
 * that many streams leased at that priority at once, so that bulk work cannot take the whole pool;
 * a waiter held back only by its priority's limit does not hold up the other priority.
 *
 * <p>Thread-safe. The pool belongs to its {@link GpuContext}, which destroys every stream at close;
 * leases still open then become stale (their use raises {@link ContextClosedException}).
 */
public interface StreamPool {

	/** Leases a normal-priority stream, waiting up to the pool's acquire timeout. */
	StreamLease acquire();

	/** Leases a normal-priority stream, waiting up to {@code timeout}. */
	StreamLease acquire(Duration timeout);

	/** Leases a stream of the given priority, waiting up to the pool's acquire timeout. */
	StreamLease acquire(StreamPriority priority);

	/**
	 * Leases a stream of the given priority.
	 * @param timeout longest wait for a free stream; zero means do not wait
	 * @throws PoolExhaustedException when none became free in time
	 * @throws ContextClosedException when the context is closing or closed
	 */
	StreamLease acquire(StreamPriority priority, Duration timeout);

	/**
	 * Leases {@code count} normal-priority streams as one unit, waiting up to the pool's acquire
	 * timeout; close the group to return them all (try-with-resources). See
	 * {@link #acquireAll(StreamPriority, int, Duration)}.
	 */
	StreamLeases acquireAll(int count);

	/** {@link #acquireAll(int)}, waiting up to {@code timeout}. */
	StreamLeases acquireAll(int count, Duration timeout);

	/** {@link #acquireAll(int)} for streams of the given priority. */
	StreamLeases acquireAll(StreamPriority priority, int count);

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
	StreamLeases acquireAll(StreamPriority priority, int count, Duration timeout);

	/**
	 * The leases held now, the oldest first: stream, time held, the thread that acquired it and,
	 * with leak detection on, where. What to look at when the pool runs dry.
	 */
	List<LeaseInfo> leases();

	/**
	 * Why the pool is stalled, or {@code null} when it is not. Stalled means that leases are not
	 * coming back: every stream the pool may hold ({@code maxSize}) is leased, the most recent lease
	 * is older than the leak-detection threshold, and callers are waiting for a stream or one timed
	 * out within that threshold. A busy pool, whose leases come and go however many callers wait, is
	 * never stalled. Without leak detection (threshold zero) there is no threshold to judge by, and
	 * this answers {@code null}.
	 */
	@Nullable String stallReason();

	/** Leases held longer than this are reported as possible leaks; zero when leak detection is off. */
	Duration leakDetectionThreshold();

	/** A consistent snapshot of the pool's figures. */
	PoolStats stats();

	/** Leased streams now; cheaper than {@link #stats()} for gauges. */
	int active();

	/** The most streams it holds at once, leased or idle. */
	int maxSize();

	/**
	 * Most streams leased at once at {@code priority}: its limit ({@code priorityLimit} of the
	 * builder, {@code gpu.streams.priority-limits}), or the pool's maximum when it has none.
	 */
	int priorityLimit(StreamPriority priority);

	/** Streams created at open and kept while idle. */
	int minSize();

	/** How long {@link #acquire()} waits for a stream before it fails. */
	Duration acquireTimeout();

	/**
	 * A snapshot of the {@link StreamPool}.
	 *
	 * @param size streams that exist now (idle + leased)
	 * @param active leased streams
	 * @param idle streams waiting in the pool
	 * @param pending threads waiting for a lease
	 * @param minSize streams created up front ({@code pool-size})
	 * @param maxSize most streams the pool will create ({@code max-size})
	 * @param created streams created since open
	 * @param destroyed streams destroyed since open
	 * @param acquisitions leases granted since open
	 * @param timeouts acquisitions that gave up
	 * @param highWaterMark most streams leased at once
	 * @param leaksDetected leases reported as held past the leak-detection threshold
	 * @param utilization average over pooled streams of the fraction of recent time they had work
	 * in flight (0..1)
	 * @param streams per-stream figures
	 */
	public record PoolStats(int size, int active, int idle, int pending, int minSize, int maxSize, long created,
			long destroyed, long acquisitions, long timeouts, int highWaterMark, long leaksDetected, double utilization,
			List<StreamStats> streams) {

		/**
		 * One pooled stream.
		 *
		 * @param name the stream's name
		 * @param priority its priority
		 * @param leased whether it is leased now
		 * @param leases how often it was leased
		 * @param heldNanos total time it was leased
		 * @param busyShare fraction of recent time it had work in flight (0..1)
		 */
		public record StreamStats(String name, StreamPriority priority, boolean leased, long leases, long heldNanos,
				double busyShare) {
		}

	}

	/**
	 * A stream lease held now, as {@link StreamPool#leases()} reports it: which stream, for how long,
	 * by which thread and, with leak detection on, where it was acquired.
	 *
	 * @param stream the leased stream's name
	 * @param priority its priority
	 * @param held how long it has been leased
	 * @param thread the name of the thread that acquired it
	 * @param site the stack where it was acquired, innermost frame first, starting at the caller of
	 * the pool; empty when leak detection is off (no stack is captured then)
	 */
	public record LeaseInfo(String stream, StreamPriority priority, Duration held, String thread,
			List<StackTraceElement> site) {
	}

	/**
	 * Several stream leases taken at once ({@link StreamPool#acquireAll(int)}), closed together:
	 *
	 * <pre>{@code
	 * try (StreamLeases leases = pool.acquireAll(3)) {
	 *     for (StreamLease lease : leases) { ... lease.stream() ... }
	 * }
	 * }</pre>
	 *
	 * <p>An unmodifiable list of the leases, in the order they were granted. {@link #close()} closes
	 * every lease, also when closing one of them fails (a throwing {@link GpuListener}, say): the first
	 * failure is rethrown after all were closed, with the others attached as suppressed. Closing twice
	 * is harmless, as for one lease. The code that acquired the group owns it and closes it; closing a
	 * lease of the group on its own first is allowed.
	 */
	public interface StreamLeases extends List<StreamLease>, AutoCloseable {



		/** The stream of lease {@code index}: {@code get(index).stream()}. */
		GpuStream stream(int index);

		/** The leased streams, in the order of the leases. */
		List<GpuStream> streams();

		/** Closes every lease; see the class comment for failures. Idempotent. */
		void close();

	}

}
