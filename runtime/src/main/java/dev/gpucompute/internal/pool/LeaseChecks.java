package dev.gpucompute.internal.pool;

import java.time.Duration;
import java.util.Objects;

import dev.gpucompute.GpuStream;
import dev.gpucompute.PoolTooSmallException;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.internal.stream.StreamHandle;
import dev.gpucompute.internal.stream.Streams;
import dev.gpucompute.settings.Limits;

/**
 * The requests a {@link Pool} refuses before it takes its lock, because waiting could never serve
 * them: bad arguments, a group larger than the pool may ever lease at once, and a request made
 * inside a scope of the pool's own streams that could be granted only by taking back the streams
 * the calling thread works on (it would wait for them until the acquire timeout).
 * <p>
 * Threading: immutable, thread-safe; it reads only the calling thread's stream scope.
 */
final class LeaseChecks {

	private final ContextState lifecycle;

	private final Streams streams;

	/** Read for its maximum and limits only, which are fixed: no lock needed. */
	private final PoolLedger ledger;

	/**
	 * @param lifecycle the pool's context, whose streams a scope must belong to for the nesting check
	 * @param streams knows the stream scope and the group of the calling thread
	 * @param ledger the pool's books, for its maximum and its priorities' limits
	 */
	LeaseChecks(ContextState lifecycle, Streams streams, PoolLedger ledger) {
		this.lifecycle = lifecycle;
		this.streams = streams;
		this.ledger = ledger;
	}

	/**
	 * @throws NullPointerException when {@code priority} or {@code timeout} is null
	 * @throws IllegalArgumentException when {@code timeout} is negative or too long
	 */
	static void checkArguments(StreamPriority priority, Duration timeout) {
		Objects.requireNonNull(priority, "priority");
		Limits.nanos(timeout, "Acquire timeout");
	}

	/**
	 * Rejects a group of {@code count} streams of {@code priority} that the pool could never lease
	 * at once.
	 * @throws IllegalArgumentException when {@code count} is below 1
	 * @throws PoolTooSmallException when {@code count} exceeds the priority's limit
	 */
	void checkGroupSize(StreamPriority priority, int count) {
		if (count < 1) {
			throw new IllegalArgumentException("Can lease 1 to " + this.ledger.limit(priority.ordinal())
					+ " streams at once, asked for " + count);
		}
		int limit = this.ledger.limit(priority.ordinal());
		if (count > limit) {
			throw new PoolTooSmallException(count, limit, priority, limit < this.ledger.maxSize());
		}
	}

	/**
	 * Refuses a request that the pool could grant only by taking back streams the calling thread
	 * works on: inside a scope of one of this pool's streams (a batch handler runs in its batch's, a
	 * branch of a group in its branch's, with the rest of its group held too), {@code count} more
	 * streams than the pool leases beside them would wait for those very streams until the acquire
	 * timeout. A lease merely held, without a scope, does not count: another thread may close it (a
	 * lease handed to a worker).
	 * @throws PoolTooSmallException when the pool's maximum, or the limit of the scope's own
	 * priority, leaves no room for {@code count} more beside the streams held
	 */
	void checkNested(StreamPriority priority, int count) {
		StreamHandle scoped = this.streams.scopedQuietly();
		if (scoped == null || scoped.kind() != GpuStream.Kind.POOLED || scoped.lifecycle() != this.lifecycle) {
			return;
		}
		// In a branch of a group the thread holds every stream of the group, not only its branch's.
		int held = Math.max(1, this.streams.groupLeasesHeld());
		int maxSize = this.ledger.maxSize();
		if (count + held > maxSize) {
			throw new PoolTooSmallException(count, maxSize, priority, false, held);
		}
		int limit = this.ledger.limit(priority.ordinal());
		if (scoped.priority() == priority && count + held > limit) {
			throw new PoolTooSmallException(count, limit, priority, true, held);
		}
	}

}
