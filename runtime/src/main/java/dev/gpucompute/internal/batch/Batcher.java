package dev.gpucompute.internal.batch;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.Consumer;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.BatchQueueFullException;
import dev.gpucompute.batch.BatchTimeoutException;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.batch.GpuBatcher.BatcherStats;
import dev.gpucompute.internal.batch.BatchQueue.Item;
import dev.gpucompute.internal.core.ContextCompletions;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.listener.GpuListener;
import dev.gpucompute.settings.Limits;

/**
 * The implementation of {@link GpuBatcher}: resolves the builder's settings, wires the batcher's
 * parts and answers the API with them. The parts share one {@link BatcherState} and its lock:
 * {@link BatchAdmission} makes, queues or refuses items (and reserves an idle batcher for a
 * {@link #call}), {@link BatchDispatch} owns the dispatch threads and runs each batch on a leased
 * stream through the {@link BatchRunner}, {@link BatchDeadlines} times out and drops queued items,
 * {@link BatchDrain} shuts down and abandons what is left, and {@link BatchCounters} keeps the
 * totals behind {@link #stats()}. This class holds the settings and what the API adds around the
 * parts: argument checks, waiting for a call's result, and telling the context once it is closed.
 *
 * <p>Thread-safe; the context builds it ({@link GpuBatcher.Builder#build()}), registers it, then
 * {@linkplain #start() starts} its dispatch threads.
 *
 * @param <I> item type
 * @param <O> result type
 */
public final class Batcher<I, O> implements GpuBatcher<I, O> {

	private static final Logger log = LoggerFactory.getLogger(GpuBatcher.class);


	/** No deadline. */
	private static final long NONE = BatchQueue.NONE;

	private final GpuContext context;

	/** Tells the context this batcher is gone, once it abandoned what was left at close. */
	private final Consumer<GpuBatcher<?, ?>> closed;

	private final String name;

	private final int maxBatchSize;

	private final long maxDelayNanos;

	private final int maxQueued;

	private final StreamPriority priority;

	private final long timeoutNanos;

	private final int concurrency;

	private final Duration drainTimeout;

	/** The queue, the running batches, the slots and the totals, and the lock that guards them. */
	private final BatcherState<I, O> state;

	/** Makes items and queues them, refuses them, or reserves an idle batcher for a call's item. */
	private final BatchAdmission<I, O> admission;

	/** The dispatch threads, and the run of each batch on its leased stream. */
	private final BatchDispatch<I, O> dispatch;

	/** Shutdown, the wait for the queue to drain, and the abandonment of what is left. */
	private final BatchDrain<I, O> drain;

	/**
	 * @param context the context whose pool leases the batches' streams (its API: leases, scopes)
	 * @param lifecycle the context's: its number names the threads and messages
	 * @param handler runs each batch
	 * @param name the batcher's name, unique among the open batchers of the context
	 * @param keyOf the batch key of an item
	 * @param settings the builder's
	 * @param listener told of batches, waits and refusals
	 * @param completions completes the futures of items that expire
	 * @param housekeeping times the deadline sweeps
	 * @param drainTimeout the context's, when the settings name none
	 * @param closed told once this batcher is closed (the context unregisters it)
	 */
	public Batcher(GpuContext context, ContextState lifecycle, BatchHandler<I, O> handler, String name,
			Function<? super I, ?> keyOf, GpuBatcher.Settings settings, GpuListener listener,
			ContextCompletions completions, ScheduledExecutorService housekeeping, Duration drainTimeout,
			Consumer<GpuBatcher<?, ?>> closed) {
		this.context = context;
		this.closed = closed;
		this.name = name;
		this.maxBatchSize = settings.maxBatchSize();
		this.maxDelayNanos = settings.maxQueueDelay().toNanos();
		this.maxQueued = settings.maxQueued();
		this.priority = settings.priority();
		this.timeoutNanos = settings.timeout().isZero() ? NONE : settings.timeout().toNanos();
		this.concurrency = settings.maxConcurrentBatches();
		Duration acquireTimeout = (settings.acquireTimeout() != null) ? settings.acquireTimeout()
				: context.streams().acquireTimeout();
		this.drainTimeout = (settings.drainTimeout() != null) ? settings.drainTimeout() : drainTimeout;
		this.state = new BatcherState<>(new BatchPacing(this.maxBatchSize, this.maxDelayNanos));
		BatchDeadlines<I, O> deadlines = new BatchDeadlines<>(this.state, this.name, housekeeping, completions::execute);
		this.admission = new BatchAdmission<>(this.state, deadlines, lifecycle, this.name, keyOf,
				this.maxBatchSize, this.maxQueued, this.concurrency);
		this.dispatch = new BatchDispatch<>(this.state, deadlines,
				new BatchRunner<>(this.name, handler, context.launcher()), context.streams(), listener, this.name,
				lifecycle.id(), this.maxBatchSize, this.concurrency, this.priority, acquireTimeout);
		this.drain = new BatchDrain<>(this.state, deadlines, this.name, lifecycle, this.drainTimeout);
	}

	// ---- submitting ---------------------------------------------------------------------------

	/**
	 * Queues an item for the next batch of its key.
	 * @return the item's result, or its failure: the batch's ({@link BatchHandler} threw, a kernel
	 * failed), its own ({@link dev.gpucompute.batch.Batch#fail}), {@link BatchTimeoutException} when its deadline passed
	 * in the queue, or {@link ContextClosedException} when it was abandoned at close
	 * @throws BatchQueueFullException when {@code maxQueued} items wait already (nothing is queued)
	 * @throws ContextClosedException when the batcher is closed or closing
	 * @throws NullPointerException when {@code item} is null
	 */
	@Override
	public CompletableFuture<O> submit(I item) {
		return this.admission.submit(item, this.timeoutNanos);
	}

	/**
	 * Queues an item with a deadline of its own: it times out after {@code timeout} in the queue, or
	 * after the batcher's {@code timeout} if that is shorter (an item may shorten the batcher's
	 * deadline, never extend it, as Triton's queue policy allows).
	 * @throws IllegalArgumentException when {@code timeout} is zero, negative or beyond 292 years
	 * @see #submit(Object)
	 */
	@Override
	public CompletableFuture<O> submit(I item, Duration timeout) {
		long nanos = Limits.nanos(timeout, "timeout");
		if (nanos == 0) {
			throw new IllegalArgumentException("timeout must be positive, got " + timeout);
		}
		return this.admission.submit(item, Math.min(nanos, this.timeoutNanos));
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
	@Override
	public O call(I item) {
		Item<I, O> own = this.admission.newItem(item, this.timeoutNanos);
		List<Item<I, O>> inline = this.admission.runInlineOrQueue(own);
		if (inline != null) {
			this.dispatch.runInline(inline, own.enqueuedAt);
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

	/** Starts the dispatch threads; once, after the context registered the batcher. */
	public void start() {
		this.dispatch.start();
	}

	// ---- close ----------------------------------------------------------------------------------

	/**
	 * Stops accepting items ({@code submit} then throws {@link ContextClosedException}); queued
	 * items are still dispatched, without waiting for fuller batches. Returns at once. Idempotent.
	 */
	@Override
	public void shutdown() {
		this.drain.shutdown();
	}

	/**
	 * Waits until, after {@link #shutdown()}, no item is queued and no batch runs any more.
	 * @return whether that happened within {@code timeout}; false at once when not shut down
	 * (interrupted: returns at once, with the interrupt status kept)
	 */
	@Override
	public boolean awaitTermination(Duration timeout) {
		return this.drain.awaitTermination(timeout);
	}

	/**
	 * Stops accepting items and abandons those not finished: queued items and items of running
	 * batches complete exceptionally now, with a {@link ContextClosedException} saying they were
	 * abandoned at close (a running handler goes on, but its results are dropped). Idempotent.
	 * @return the items abandoned
	 */
	@Override
	public int shutdownNow() {
		int count = this.drain.shutdownNow();
		this.closed.accept(this);
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

	@Override
	public boolean isShutdown() {
		return this.drain.isShutdown();
	}

	// ---- accessors ------------------------------------------------------------------------------

	@Override
	public String name() {
		return this.name;
	}

	@Override
	public GpuContext context() {
		return this.context;
	}

	@Override
	public int maxBatchSize() {
		return this.maxBatchSize;
	}

	@Override
	public Duration maxQueueDelay() {
		return Duration.ofNanos(this.maxDelayNanos);
	}

	@Override
	public int maxQueued() {
		return this.maxQueued;
	}

	@Override
	public StreamPriority priority() {
		return this.priority;
	}

	@Override
	public Duration timeout() {
		return (this.timeoutNanos == NONE) ? Duration.ZERO : Duration.ofNanos(this.timeoutNanos);
	}

	@Override
	public int maxConcurrentBatches() {
		return this.concurrency;
	}

	@Override
	public int queued() {
		this.state.lock.lock();
		try {
			return this.state.queue.size();
		}
		finally {
			this.state.lock.unlock();
		}
	}

	@Override
	public BatcherStats stats() {
		this.state.lock.lock();
		try {
			return this.state.counters.snapshot(this.name, this.state.queue.size(), this.state.inFlight, this.maxBatchSize, this.maxQueued);
		}
		finally {
			this.state.lock.unlock();
		}
	}

	@Override
	public String toString() {
		return "GpuBatcher[" + this.name + ", " + this.context + (isShutdown() ? ", shut down" : "") + "]";
	}

	/**
	 * Closes several batchers within one timeout, so that they drain in parallel: all stop accepting
	 * first, then each is waited for until the common deadline, then what is left is abandoned (and
	 * logged).
	 * @return whether every batcher finished its items in time (nothing abandoned)
	 */
	public static boolean closeAll(Collection<? extends GpuBatcher<?, ?>> batchers, Duration timeout) {
		long deadline = System.nanoTime() + Limits.nanos(timeout, "timeout");
		for (GpuBatcher<?, ?> batcher : batchers) {
			batcher.shutdown();
		}
		boolean clean = true;
		for (GpuBatcher<?, ?> batcher : batchers) {
			boolean done = batcher.awaitTermination(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
			int abandonedNow = batcher.shutdownNow();
			if (!done || abandonedNow > 0) {
				clean = false;
				log.warn("Batcher '{}' did not finish its items within {}: {} abandoned at close", batcher.name(), timeout,
						abandonedNow);
			}
		}
		return clean;
	}

}
