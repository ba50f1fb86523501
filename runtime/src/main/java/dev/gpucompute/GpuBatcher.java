package dev.gpucompute;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.BatchQueue.Item;

/**
 * A dynamic batcher: many small concurrent submissions become few full handler calls, each on a
 * leased stream. Callers {@link #submit(Object)} items and get a {@link CompletableFuture} of their
 * own result, or {@link #call(Object)} and wait for it (running the batch themselves when the batcher
 * is idle); items with the same batch key are grouped, and a {@link BatchHandler} runs each batch
 * and returns one result (or failure) per item.
 *
 * <p><b>Continuous batching.</b> The batcher has {@code maxConcurrentBatches} dispatch threads. An
 * item that finds the batcher idle is dispatched at once (no added latency when idle). While
 * batches run, items accumulate, and a free dispatcher forms the next batch as soon as it can: with
 * the default {@code maxQueueDelay} of zero at once, with whatever waits. A positive delay lets
 * batches fill: while other batches run, the oldest item waits at most the delay (or until its key
 * has {@code maxBatchSize} items); right after a batch of n items, the waiting items are held until
 * n items wait (the callers that batch set free coming back), a full batch, or the delay since it
 * ended, whichever comes first. Nothing is held once the delay has passed since the last batch, so
 * an item that finds the batcher idle goes at once whatever the delay. The batch is taken from the
 * queue only once its stream is leased, so everything that arrived while the dispatcher waited for
 * a stream joins it. Batches are formed oldest key first; within a key, items keep their order.
 *
 * <p><b>Back-pressure, deadlines, cancellation.</b> At most {@code maxQueued} items wait; beyond,
 * {@code submit} throws {@link BatchQueueFullException} at once, with a retry-after hint. An item
 * whose deadline ({@code timeout}, or a shorter one given to {@link #submit(Object, Duration)})
 * passes in the queue completes with {@link BatchTimeoutException} and is never run. A future
 * cancelled (or completed) by its caller before dispatch is dropped from the queue.
 *
 * <p><b>Failures.</b> A handler that throws, or a kernel failure reported while the batch runs or
 * when the batcher waits for the batch's stream after the handler, fails that batch's items and no
 * others; {@link Batch#fail(int, Throwable)} fails single items. The stream goes back to the pool
 * clean (the runtime's failure rules), so the next batch is not affected.
 *
 * <p><b>Streams.</b> Each batch holds one leased stream, current while its handler runs: the
 * handler's launches and copies go there. A handler should do its work on that stream rather than
 * lease more; a lease (or a stream-parallel group) that the pool could only grant by taking back the
 * batch's own stream fails at once with {@link PoolTooSmallException} instead of waiting for itself
 * until the acquire timeout.
 *
 * <p><b>Close.</b> {@link #close()} stops accepting items, lets queued items be dispatched within
 * the drain timeout and then completes whatever is still queued or running exceptionally with a
 * {@link ContextClosedException} that says it was abandoned at close: no future is left incomplete.
 * A batcher belongs to its {@link GpuContext}, which closes it (within the context's drain timeout)
 * before it stops its stream pool, also through {@link GpuContext#drain(Duration)} and
 * {@link GpuDevices#close()}.
 *
 * <p>Thread-safe. Futures complete on the batcher's threads (or the context's completion threads
 * for timeouts, or the closing thread when abandoned): dependent stages that do more than hand the
 * result over should use the {@code *Async} variants. The batcher owns its threads; the caller owns
 * the batcher and closes it (or leaves it to the context's close).
 *
 * @param <I> item type
 * @param <O> result type
 */
public final class GpuBatcher<I, O> implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(GpuBatcher.class);

	/** No deadline. */
	private static final long NONE = BatchQueue.NONE;

	/** Most items per batch ({@code maxBatchSize}). */
	public static final int MAX_BATCH_SIZE = 1 << 16;

	/** Most items a queue may hold ({@code maxQueued}). */
	public static final int MAX_QUEUED = 1 << 24;

	private enum State {

		OPEN, SHUTDOWN

	}

	private final GpuContext context;

	private final String name;

	private final Function<? super I, ?> keyOf;

	private final int maxBatchSize;

	private final long maxDelayNanos;

	private final int maxQueued;

	private final StreamPriority priority;

	private final long timeoutNanos;

	private final int concurrency;

	private final Duration acquireTimeout;

	private final Duration drainTimeout;

	private final BatchRunner<I, O> runner;

	private final ReentrantLock lock = new ReentrantLock();

	/** Idle dispatchers wait here for a batch to become ready. */
	private final Condition work = this.lock.newCondition();

	/** {@link #awaitTermination} waits here. */
	private final Condition finished = this.lock.newCondition();

	// Everything below is guarded by lock.

	private final BatchQueue<I, O> queue = new BatchQueue<>();

	/** Items of the batches being run, to abandon at close. */
	private final Set<List<Item<I, O>>> running = Collections.newSetFromMap(new java.util.IdentityHashMap<>());

	private State state = State.OPEN;

	/** Dispatchers that reserved a batch: leasing its stream, running it or completing its futures. */
	private int inFlight;

	/** Batches reserved whose results are not out yet: what holding for a fuller batch looks at. */
	private int busy;

	private int idleDispatchers;

	/** Runs {@link #sweep()} by the earliest deadline of the queued items. */
	private final SweepTimer sweeps;

	private long submitted;

	private long rejected;

	private long expired;

	private long cancelled;

	private long abandoned;

	private long batches;

	private long dispatched;

	private long succeeded;

	private long failed;

	/** Holding for fuller batches and the retry-after hint, from the recent batches. */
	private final BatchPacing pacing;

	private GpuBatcher(Builder<I, O> builder) {
		this.context = builder.context;
		this.name = builder.name;
		this.keyOf = builder.keyOf;
		this.maxBatchSize = builder.maxBatchSize;
		this.maxDelayNanos = builder.maxQueueDelay.toNanos();
		this.maxQueued = builder.maxQueued;
		this.priority = builder.priority;
		this.timeoutNanos = builder.timeout.isZero() ? NONE : builder.timeout.toNanos();
		this.concurrency = builder.maxConcurrentBatches;
		this.acquireTimeout = (builder.acquireTimeout != null) ? builder.acquireTimeout
				: this.context.streams().acquireTimeout();
		this.drainTimeout = (builder.drainTimeout != null) ? builder.drainTimeout : this.context.drainTimeout();
		this.pacing = new BatchPacing(this.maxBatchSize, this.maxDelayNanos);
		this.sweeps = new SweepTimer(this.context, this::sweep);
		this.runner = new BatchRunner<>(this.name, builder.handler, this.context);
	}

	/**
	 * A builder of a batcher on {@code context}'s stream pool, running batches with {@code handler}.
	 * @param context the context whose streams the batches run on; it closes the batcher at the latest
	 * when it closes
	 * @param handler runs one batch; called on the batcher's threads
	 */
	public static <I, O> Builder<I, O> builder(GpuContext context, BatchHandler<I, O> handler) {
		return new Builder<>(context, handler);
	}

	// ---- submitting ---------------------------------------------------------------------------

	/**
	 * Queues an item for the next batch of its key.
	 * @return the item's result, or its failure: the batch's ({@link BatchHandler} threw, a kernel
	 * failed), its own ({@link Batch#fail}), {@link BatchTimeoutException} when its deadline passed
	 * in the queue, or {@link ContextClosedException} when it was abandoned at close
	 * @throws BatchQueueFullException when {@code maxQueued} items wait already (nothing is queued)
	 * @throws ContextClosedException when the batcher is closed or closing
	 * @throws NullPointerException when {@code item} is null
	 */
	public CompletableFuture<O> submit(I item) {
		return enqueue(item, this.timeoutNanos);
	}

	/**
	 * Queues an item with a deadline of its own: it times out after {@code timeout} in the queue, or
	 * after the batcher's {@code timeout} if that is shorter (an item may shorten the batcher's
	 * deadline, never extend it, as Triton's queue policy allows).
	 * @throws IllegalArgumentException when {@code timeout} is zero, negative or beyond 292 years
	 * @see #submit(Object)
	 */
	public CompletableFuture<O> submit(I item, Duration timeout) {
		long nanos = Checks.nanos(timeout, "timeout");
		if (nanos == 0) {
			throw new IllegalArgumentException("timeout must be positive, got " + timeout);
		}
		return enqueue(item, Math.min(nanos, this.timeoutNanos));
	}

	private CompletableFuture<O> enqueue(I value, long timeout) {
		Item<I, O> item = newItem(value, timeout);
		this.lock.lock();
		try {
			add(item);
		}
		finally {
			this.lock.unlock();
		}
		return item.future;
	}

	private Item<I, O> newItem(I value, long timeout) {
		Objects.requireNonNull(value, "item");
		Object key = this.keyOf.apply(value);
		long now = System.nanoTime();
		long deadline = (timeout == NONE || now + timeout < now) ? NONE : now + timeout;
		return new Item<>(value, key, now, deadline, this::cancelled);
	}

	/** Queues an item, with the lock held. */
	private void add(Item<I, O> item) {
		if (this.state != State.OPEN) {
			throw closedError();
		}
		if (this.queue.size() >= this.maxQueued) {
			this.rejected++;
			throw new BatchQueueFullException(this.name, this.maxQueued,
					this.pacing.retryAfter(this.queue.size(), this.concurrency));
		}
		boolean wasEmpty = this.queue.size() == 0;
		int ofKey = this.queue.add(item);
		this.submitted++;
		// Waiting dispatchers hold for the oldest item's delay; a new item changes that only when the
		// queue was empty, nothing runs, or its key now fills a batch.
		if (this.idleDispatchers > 0 && (wasEmpty || this.busy == 0 || ofKey >= this.maxBatchSize)) {
			this.work.signal();
		}
		if (item.deadline != NONE) {
			this.sweeps.scheduleBy(item.deadline);
		}
	}

	/**
	 * Submits an item and waits for its result, for callers that would block on the future anyway
	 * (a request thread). When the batcher is idle (nothing queued, no batch running, a batch slot
	 * free) the item runs as a batch of one on the calling thread, without the hand-off to a
	 * dispatch thread and back; otherwise it waits in the queue like {@link #submit(Object)}'s
	 * items. Either way it is the same batch, handler and failure rules.
	 * @return the item's result
	 * @throws RuntimeException the item's failure as {@link #submit(Object)}'s future would carry it
	 * (an {@link Error} as itself; a checked exception of the handler wrapped in a {@link GpuException})
	 * @throws BatchQueueFullException when {@code maxQueued} items wait already
	 * @throws ContextClosedException when the batcher is closed or closing
	 * @throws GpuException when interrupted while waiting (the item is cancelled, the interrupt kept)
	 */
	public O call(I item) {
		Item<I, O> own = newItem(item, this.timeoutNanos);
		List<Item<I, O>> inline = null;
		this.lock.lock();
		try {
			if (this.state == State.OPEN && this.queue.size() == 0 && this.busy == 0 && this.inFlight < this.concurrency
					&& !this.pacing.holdingAfterBatch(own.enqueuedAt)) {
				own.queued = false;
				inline = List.of(own);
				this.submitted++;
				this.inFlight++;
				this.busy++;
				this.running.add(inline);
				this.batches++;
				this.dispatched++;
			}
			else {
				add(own);
			}
		}
		finally {
			this.lock.unlock();
		}
		if (inline != null) {
			StreamLease lease = null;
			RuntimeException noStream = null;
			try {
				lease = this.context.streams().acquire(this.priority, this.acquireTimeout);
			}
			catch (RuntimeException ex) {
				noStream = ex;
			}
			execute(inline, lease, noStream, own.enqueuedAt);
		}
		try {
			return own.future.get();
		}
		catch (java.util.concurrent.ExecutionException ex) {
			Throwable cause = ex.getCause();
			if (cause instanceof RuntimeException runtime) {
				throw runtime;
			}
			if (cause instanceof Error error) {
				throw error;
			}
			throw new GpuException("The handler of batcher '" + this.name + "' failed", cause);
		}
		catch (InterruptedException ex) {
			own.future.cancel(false);
			Thread.currentThread().interrupt();
			throw new GpuException("Interrupted while waiting for an item of batcher '" + this.name + "'", ex);
		}
	}

	private ContextClosedException closedError() {
		return new ContextClosedException("Batcher '" + this.name + "' is closed" + (this.context.isClosed()
				? " (its GPU context is closing or closed)" : ""));
	}

	// ---- dispatching --------------------------------------------------------------------------

	private void start() {
		for (int i = 1; i <= this.concurrency; i++) {
			Thread thread = new Thread(this::dispatchLoop,
					"gpu-" + this.context.id() + "-batch-" + this.name + "-" + i);
			thread.setDaemon(true);
			thread.start();
		}
	}

	private void dispatchLoop() {
		while (reserve()) {
			runOne();
		}
	}

	/**
	 * Waits until a batch is ready and reserves it for this dispatcher; false when the batcher is
	 * shut down and its queue is empty.
	 */
	private boolean reserve() {
		this.lock.lock();
		try {
			this.idleDispatchers++;
			try {
				while (true) {
					if (this.queue.size() == 0) {
						if (this.state != State.OPEN) {
							return false;
						}
						this.work.awaitUninterruptibly();
						continue;
					}
					if (this.inFlight >= this.concurrency) {
						// A caller runs a batch inline (call): no slot is free until it ends.
						this.work.await();
						continue;
					}
					long wait = this.pacing.nanosUntilReady(System.nanoTime(), this.state == State.OPEN, this.busy,
							this.queue);
					if (wait <= 0) {
						break;
					}
					this.work.awaitNanos(wait);
				}
			}
			catch (InterruptedException ex) {
				// Dispatchers are never interrupted by the batcher; someone else did: stop this one.
				Thread.currentThread().interrupt();
				return false;
			}
			finally {
				this.idleDispatchers--;
			}
			this.inFlight++;
			this.busy++;
			return true;
		}
		finally {
			this.lock.unlock();
		}
	}

	/** Leases a stream, takes a batch and runs it; the reservation ends here. */
	private void runOne() {
		StreamLease lease = null;
		RuntimeException noStream = null;
		try {
			lease = this.context.streams().acquire(this.priority, this.acquireTimeout);
		}
		catch (RuntimeException ex) {
			noStream = ex;
		}
		List<Item<I, O>> batch;
		List<Item<I, O>> dropped = new ArrayList<>();
		List<Item<I, O>> expiredNow = new ArrayList<>();
		long start = System.nanoTime();
		this.lock.lock();
		try {
			batch = this.queue.take(start, this.maxBatchSize, dropped, expiredNow);
			this.cancelled += dropped.size();
			this.expired += expiredNow.size();
			if (!batch.isEmpty()) {
				this.running.add(batch);
				this.batches++;
				this.dispatched += batch.size();
			}
		}
		finally {
			this.lock.unlock();
		}
		expire(expiredNow, start);
		if (batch.isEmpty()) {
			if (lease != null) {
				lease.close();
			}
			this.lock.lock();
			try {
				this.busy--;
			}
			finally {
				this.lock.unlock();
			}
			finish(batch, 0, 0);
			return;
		}
		execute(batch, lease, noStream, start);
	}

	/**
	 * Runs a taken batch (on a dispatch thread, or inline on a caller's thread), then releases its
	 * results, completes its futures and ends its reservation.
	 */
	private void execute(List<Item<I, O>> batch, StreamLease lease, RuntimeException noStream, long start) {
		GpuListener listener = this.context.listener();
		listener.batchDispatched(this.name, batch.size());
		for (Item<I, O> item : batch) {
			listener.batchItemWaited(this.name, start - item.enqueuedAt);
		}
		Object[] results = new Object[batch.size()];
		Throwable[] failures = new Throwable[batch.size()];
		if (lease == null) {
			java.util.Arrays.fill(failures, noStream);
		}
		else {
			this.runner.run(batch, lease, results, failures);
		}
		long elapsed = System.nanoTime() - start;
		released(batch.size(), elapsed);
		int ok = 0;
		int bad = 0;
		for (int i = 0; i < batch.size(); i++) {
			CompletableFuture<O> future = batch.get(i).future;
			@SuppressWarnings("unchecked")
			O result = (O) results[i];
			if ((failures[i] != null) ? future.completeExceptionally(failures[i]) : future.complete(result)) {
				if (failures[i] != null) {
					bad++;
				}
				else {
					ok++;
				}
			}
		}
		finish(batch, ok, bad);
	}

	/**
	 * A batch's results are about to go out: it no longer counts as running for holding, and its end
	 * and size are what the next batch may be held for.
	 */
	private void released(int size, long elapsed) {
		this.lock.lock();
		try {
			this.busy--;
			this.pacing.batchEnded(size, elapsed);
			if (this.queue.size() > 0 && this.idleDispatchers > 0) {
				this.work.signal();
			}
		}
		finally {
			this.lock.unlock();
		}
	}

	/**
	 * Ends a reservation, booking the items its batch completed ({@code ok}, {@code bad}): the batch
	 * no longer runs, and a waiting dispatcher may now be ready.
	 */
	private void finish(List<Item<I, O>> batch, int ok, int bad) {
		this.lock.lock();
		try {
			this.succeeded += ok;
			this.failed += bad;
			this.running.remove(batch);
			this.inFlight--;
			if (this.queue.size() > 0 && this.idleDispatchers > 0) {
				this.work.signal();
			}
			this.finished.signalAll();
		}
		finally {
			this.lock.unlock();
		}
	}

	private void expire(List<Item<I, O>> items, long now) {
		for (Item<I, O> item : items) {
			item.future.completeExceptionally(new BatchTimeoutException(this.name, Duration.ofNanos(now - item.enqueuedAt)));
		}
	}

	// ---- deadlines ----------------------------------------------------------------------------

	/**
	 * Times out the queued items whose deadline passed, so that their callers learn it when it
	 * happens, not when a dispatcher is next free. Runs on the context's housekeeping thread; the
	 * futures complete on its completion threads.
	 */
	private void sweep() {
		List<Item<I, O>> expiredNow = new ArrayList<>();
		long now = System.nanoTime();
		this.lock.lock();
		try {
			this.sweeps.fired();
			long next = this.queue.removeExpired(now, expiredNow);
			this.expired += expiredNow.size();
			if (next != NONE) {
				this.sweeps.scheduleBy(next);
			}
			if (!expiredNow.isEmpty()) {
				this.finished.signalAll();
			}
		}
		finally {
			this.lock.unlock();
		}
		if (!expiredNow.isEmpty()) {
			this.context.execute(() -> expire(expiredNow, now));
		}
	}

	/** Drops an item whose caller cancelled its future, if it is still queued. */
	private void cancelled(Item<I, O> item) {
		this.lock.lock();
		try {
			if (this.queue.remove(item)) {
				this.cancelled++;
				this.finished.signalAll();
			}
		}
		finally {
			this.lock.unlock();
		}
	}

	// ---- close ----------------------------------------------------------------------------------

	/**
	 * Stops accepting items ({@code submit} then throws {@link ContextClosedException}); queued
	 * items are still dispatched, without waiting for fuller batches. Returns at once. Idempotent.
	 */
	public void shutdown() {
		this.lock.lock();
		try {
			if (this.state == State.OPEN) {
				this.state = State.SHUTDOWN;
				this.work.signalAll();
				this.finished.signalAll();
			}
		}
		finally {
			this.lock.unlock();
		}
	}

	/**
	 * Waits until, after {@link #shutdown()}, no item is queued and no batch runs any more.
	 * @return whether that happened within {@code timeout}; false at once when not shut down
	 * (interrupted: returns at once, with the interrupt status kept)
	 */
	public boolean awaitTermination(Duration timeout) {
		long remaining = Checks.nanos(timeout, "timeout");
		this.lock.lock();
		try {
			while (!isTerminatedLocked()) {
				if (remaining <= 0 || this.state == State.OPEN) {
					return false;
				}
				remaining = this.finished.awaitNanos(remaining);
			}
			return true;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return isTerminatedLocked();
		}
		finally {
			this.lock.unlock();
		}
	}

	private boolean isTerminatedLocked() {
		return this.state != State.OPEN && this.queue.size() == 0 && this.inFlight == 0;
	}

	/**
	 * Stops accepting items and abandons those not finished: queued items and items of running
	 * batches complete exceptionally now, with a {@link ContextClosedException} saying they were
	 * abandoned at close (a running handler goes on, but its results are dropped). Idempotent.
	 * @return the items abandoned
	 */
	public int shutdownNow() {
		List<Item<I, O>> queuedItems;
		List<Item<I, O>> runningItems = new ArrayList<>();
		this.lock.lock();
		try {
			if (this.state == State.OPEN) {
				this.state = State.SHUTDOWN;
			}
			queuedItems = this.queue.removeAll();
			for (List<Item<I, O>> batch : this.running) {
				runningItems.addAll(batch);
			}
			this.sweeps.cancel();
			this.work.signalAll();
			this.finished.signalAll();
		}
		finally {
			this.lock.unlock();
		}
		String what = "Batcher '" + this.name + "' of GPU context #" + this.context.id() + " closed before this item ";
		int count = abandon(queuedItems, what + "ran: it was abandoned at close, still queued when the drain timeout of "
				+ this.drainTimeout + " passed");
		count += abandon(runningItems, what + "finished: it was abandoned at close, its batch still running when the "
				+ "drain timeout of " + this.drainTimeout + " passed");
		if (count > 0) {
			this.lock.lock();
			try {
				this.abandoned += count;
			}
			finally {
				this.lock.unlock();
			}
		}
		return count;
	}

	private int abandon(List<Item<I, O>> items, String reason) {
		int count = 0;
		for (Item<I, O> item : items) {
			if (item.future.completeExceptionally(new ContextClosedException(reason))) {
				count++;
			}
		}
		return count;
	}

	/**
	 * Closes the batcher: stops accepting items, waits up to the drain timeout (the context's, unless
	 * set on the builder) for queued items to be dispatched and running batches to finish, then
	 * abandons the rest ({@link #shutdownNow()}). Returns with every future complete. Idempotent.
	 */
	@Override
	public void close() {
		closeAll(List.of(this), this.drainTimeout);
	}

	/**
	 * Closes several batchers within one timeout, so that they drain in parallel: all stop accepting
	 * first, then each is waited for until the common deadline, then what is left is abandoned.
	 * @return whether every batcher finished its items in time (nothing abandoned)
	 */
	public static boolean closeAll(Collection<? extends GpuBatcher<?, ?>> batchers, Duration timeout) {
		long deadline = System.nanoTime() + Checks.nanos(timeout, "timeout");
		for (GpuBatcher<?, ?> batcher : batchers) {
			batcher.shutdown();
		}
		boolean clean = true;
		for (GpuBatcher<?, ?> batcher : batchers) {
			boolean done = batcher.awaitTermination(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
			int abandonedNow = batcher.shutdownNow();
			batcher.context.unregister(batcher);
			if (!done || abandonedNow > 0) {
				clean = false;
				log.warn("Batcher '{}' did not finish its items within {}: {} abandoned at close", batcher.name, timeout,
						abandonedNow);
			}
		}
		return clean;
	}

	/** Whether {@link #shutdown()} (or close) was called. */
	public boolean isShutdown() {
		this.lock.lock();
		try {
			return this.state != State.OPEN;
		}
		finally {
			this.lock.unlock();
		}
	}

	// ---- accessors ------------------------------------------------------------------------------

	/** The batcher's name, unique among the open batchers of its context (the {@code batcher} meter tag). */
	public String name() {
		return this.name;
	}

	public GpuContext context() {
		return this.context;
	}

	public int maxBatchSize() {
		return this.maxBatchSize;
	}

	public Duration maxQueueDelay() {
		return Duration.ofNanos(this.maxDelayNanos);
	}

	public int maxQueued() {
		return this.maxQueued;
	}

	public StreamPriority priority() {
		return this.priority;
	}

	/** The deadline of an item in the queue; {@link Duration#ZERO} for none. */
	public Duration timeout() {
		return (this.timeoutNanos == NONE) ? Duration.ZERO : Duration.ofNanos(this.timeoutNanos);
	}

	public int maxConcurrentBatches() {
		return this.concurrency;
	}

	/** Items waiting now; cheaper than {@link #stats()} for a gauge. */
	public int queued() {
		this.lock.lock();
		try {
			return this.queue.size();
		}
		finally {
			this.lock.unlock();
		}
	}

	/** A consistent snapshot of the batcher's figures. */
	public BatcherStats stats() {
		this.lock.lock();
		try {
			return new BatcherStats(this.name, this.queue.size(), this.inFlight, this.submitted, this.rejected, this.expired,
					this.cancelled, this.abandoned, this.batches, this.dispatched, this.succeeded, this.failed,
					this.maxBatchSize, this.maxQueued);
		}
		finally {
			this.lock.unlock();
		}
	}

	@Override
	public String toString() {
		return "GpuBatcher[" + this.name + ", " + this.context + (isShutdown() ? ", shut down" : "") + "]";
	}

	// ---- builder --------------------------------------------------------------------------------

	/**
	 * Configures and builds a {@link GpuBatcher}. The settings follow Triton Inference Server's dynamic
	 * batcher: {@code maxBatchSize} (Triton's max_batch_size, and its one preferred batch size),
	 * {@code maxQueueDelay} (max_queue_delay_microseconds, here applied only right after or during
	 * batches, never to an item that finds the batcher idle),
	 * {@code maxQueued} (max_queue_size, but always bounded), {@code timeout} (default_timeout_microseconds
	 * with the REJECT action; a submit may shorten it), {@code priority} (the stream pool's priority of
	 * the batches) and {@code maxConcurrentBatches} (the instance count). Not thread-safe; use once.
	 */
	public static final class Builder<I, O> {

		private final GpuContext context;

		private final BatchHandler<I, O> handler;

		private String name = "batcher";

		private Function<? super I, ?> keyOf = (item) -> null;

		private int maxBatchSize = 64;

		private Duration maxQueueDelay = Duration.ZERO;

		private int maxQueued = 1024;

		private StreamPriority priority = StreamPriority.NORMAL;

		private Duration timeout = Duration.ZERO;

		private int maxConcurrentBatches = 1;

		private Duration acquireTimeout;

		private Duration drainTimeout;

		private Builder(GpuContext context, BatchHandler<I, O> handler) {
			this.context = Objects.requireNonNull(context, "context");
			this.handler = Objects.requireNonNull(handler, "handler");
		}

		/**
		 * The name (default {@code batcher}): letters, digits, '-', '_' and '.', 1 to 64 characters,
		 * unique among the open batchers of the context; it names the threads and tags the meters.
		 */
		public Builder<I, O> name(String name) {
			Objects.requireNonNull(name, "name");
			if (!name.matches("[A-Za-z0-9._-]{1,64}")) {
				throw new IllegalArgumentException("A batcher name must be 1 to 64 letters, digits, '.', '_' or '-', got '"
						+ name + "'");
			}
			this.name = name;
			return this;
		}

		/**
		 * The batch key of an item (default: every item has the same key): only items with equal keys
		 * ({@code equals}/{@code hashCode}) share a batch. Called once per item, on the submitting thread.
		 */
		public Builder<I, O> batchKey(Function<? super I, ?> keyOf) {
			this.keyOf = Objects.requireNonNull(keyOf, "keyOf");
			return this;
		}

		/** Most items per batch: 1 to {@value GpuBatcher#MAX_BATCH_SIZE} (default 64). */
		public Builder<I, O> maxBatchSize(int maxBatchSize) {
			this.maxBatchSize = Checks.within(maxBatchSize, 1, MAX_BATCH_SIZE, "maxBatchSize");
			return this;
		}

		/**
		 * Longest time items are held back from a free dispatcher in the hope of a fuller batch
		 * (default zero: a free dispatcher takes what waits): while other batches run, counted from
		 * the oldest item's arrival; right after a batch of n items, counted from its end, and only
		 * until n items wait. An item that finds the batcher idle (no batch within the delay) goes at
		 * once.
		 */
		public Builder<I, O> maxQueueDelay(Duration delay) {
			Checks.nanos(delay, "maxQueueDelay");
			this.maxQueueDelay = delay;
			return this;
		}

		/** Most items waiting; beyond, submit fails at once: 1 to {@value GpuBatcher#MAX_QUEUED} (default 1024). */
		public Builder<I, O> maxQueued(int maxQueued) {
			this.maxQueued = Checks.within(maxQueued, 1, MAX_QUEUED, "maxQueued");
			return this;
		}

		/** The priority of the batches' stream leases (default {@link StreamPriority#NORMAL}). */
		public Builder<I, O> priority(StreamPriority priority) {
			this.priority = Objects.requireNonNull(priority, "priority");
			return this;
		}

		/** Longest wait of an item in the queue before it times out; zero (the default) for none. */
		public Builder<I, O> timeout(Duration timeout) {
			Checks.nanos(timeout, "timeout");
			this.timeout = timeout;
			return this;
		}

		/**
		 * Most batches run at once, each on its own stream and dispatch thread (default 1): 1 to the
		 * pool's maximum size and the priority's limit.
		 */
		public Builder<I, O> maxConcurrentBatches(int batches) {
			this.maxConcurrentBatches = Checks.within(batches, 1, GpuContext.MAX_STREAMS, "maxConcurrentBatches");
			return this;
		}

		/**
		 * Longest wait for a batch's stream lease (default: the pool's acquire timeout); past it the
		 * batch's items fail with {@link PoolExhaustedException}.
		 */
		public Builder<I, O> acquireTimeout(Duration timeout) {
			Checks.nanos(timeout, "acquireTimeout");
			this.acquireTimeout = timeout;
			return this;
		}

		/** Longest wait at {@link GpuBatcher#close()} for queued and running items (default: the context's drain timeout). */
		public Builder<I, O> drainTimeout(Duration timeout) {
			Checks.nanos(timeout, "drainTimeout");
			this.drainTimeout = timeout;
			return this;
		}

		/**
		 * Builds the batcher, starts its dispatch threads and registers it with its context.
		 * @throws IllegalArgumentException when {@code maxConcurrentBatches} exceeds what the pool can lease
		 * at the batcher's priority
		 * @throws IllegalStateException when an open batcher of the context has the same name
		 * @throws ContextClosedException when the context is closing or closed
		 */
		public GpuBatcher<I, O> build() {
			int leasable = Math.min(this.context.streams().maxSize(), this.context.streams().priorityLimit(this.priority));
			if (this.maxConcurrentBatches > leasable) {
				throw new IllegalArgumentException("maxConcurrentBatches (" + this.maxConcurrentBatches + ") exceeds the "
						+ leasable + " streams the pool can lease at priority " + this.priority);
			}
			GpuBatcher<I, O> batcher = new GpuBatcher<>(this);
			this.context.register(batcher);
			batcher.start();
			this.context.listener().batcherOpened(batcher.name);
			return batcher;
		}

	}

}
