package dev.gpucompute.internal.batch;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamPriority;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.batch.BatchQueue.Item;
import dev.gpucompute.listener.GpuListener;
import org.jspecify.annotations.Nullable;

/**
 * The dispatch of a {@link GpuBatcher}'s batches: its dispatch threads, one per batch slot
 * ({@code maxConcurrentBatches}), each of which waits until a batch is ready (a full key, the delay
 * passed, or at once when shutting down), reserves a slot, leases a stream from the context's pool,
 * takes the batch, runs it through the {@link BatchRunner} and completes its items' futures; and
 * the same run for a batch of one that a caller of {@link GpuBatcher#call} reserved and runs inline.
 * A batch whose stream cannot be leased fails its items with the pool's exception. Owns the dispatch
 * threads (daemons, named {@code gpu-<context>-batch-<name>-<n>}); they end once the batcher is shut
 * down and its queue is empty.
 *
 * <p>Threading: a slot is reserved, a batch taken, and a batch's end booked under the batcher's lock
 * ({@link BatcherState#lock}), each in one step; leasing, the handler and the futures' completion
 * happen outside it. A reservation counts in {@code inFlight} from the reservation until its futures
 * are complete, and in {@code busy} until its results are about to go out (what holding for a fuller
 * batch looks at); every reservation ends in {@link #finish}, batch or none.
 *
 * @param <I> item type
 * @param <O> result type
 */
final class BatchDispatch<I, O> {

	private final BatcherState<I, O> state;

	/** Fails the items a dispatcher finds expired when it takes a batch. */
	private final BatchDeadlines<I, O> deadlines;

	private final BatchRunner<I, O> runner;

	/** The context's pool, which leases each batch its stream. */
	private final StreamPool streams;

	/** Told of each batch and of how long its items waited. */
	private final GpuListener listener;

	private final String name;

	private final int contextId;

	private final int maxBatchSize;

	private final int concurrency;

	private final StreamPriority priority;

	private final Duration acquireTimeout;

	/**
	 * @param state the batcher's
	 * @param deadlines the batcher's
	 * @param runner runs each batch's handler on its stream
	 * @param streams the pool the batches lease their streams from
	 * @param listener told of batches and waits
	 * @param name the batcher's, for the listener and the threads' names
	 * @param contextId the context's number, for the threads' names
	 * @param maxBatchSize the most items of a batch
	 * @param concurrency the batch slots: as many dispatch threads
	 * @param priority of the leased streams
	 * @param acquireTimeout how long to wait for a stream
	 */
	BatchDispatch(BatcherState<I, O> state, BatchDeadlines<I, O> deadlines, BatchRunner<I, O> runner, StreamPool streams,
			GpuListener listener, String name, int contextId, int maxBatchSize, int concurrency, StreamPriority priority,
			Duration acquireTimeout) {
		this.state = state;
		this.deadlines = deadlines;
		this.runner = runner;
		this.streams = streams;
		this.listener = listener;
		this.name = name;
		this.contextId = contextId;
		this.maxBatchSize = maxBatchSize;
		this.concurrency = concurrency;
		this.priority = priority;
		this.acquireTimeout = acquireTimeout;
	}

	/** Starts the dispatch threads; once, after the context registered the batcher. */
	void start() {
		for (int i = 1; i <= this.concurrency; i++) {
			Thread thread = new Thread(this::dispatchLoop, "gpu-" + this.contextId + "-batch-" + this.name + "-" + i);
			thread.setDaemon(true);
			thread.start();
		}
	}

	/**
	 * Runs a batch that {@link BatchAdmission#runInlineOrQueue} reserved and took, on the calling
	 * thread: leases its stream, runs it, completes its futures and ends its reservation.
	 * @param start when the batch was taken ({@link System#nanoTime()})
	 */
	void runInline(List<Item<I, O>> batch, long start) {
		StreamLease lease = null;
		RuntimeException noStream = null;
		try {
			lease = this.streams.acquire(this.priority, this.acquireTimeout);
		}
		catch (RuntimeException ex) {
			noStream = ex;
		}
		execute(batch, lease, noStream, start);
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
		this.state.lock.lock();
		try {
			this.state.idleDispatchers++;
			try {
				while (true) {
					if (this.state.queue.size() == 0) {
						if (!this.state.isOpen()) {
							return false;
						}
						this.state.work.awaitUninterruptibly();
						continue;
					}
					if (this.state.inFlight >= this.concurrency) {
						// A caller runs a batch inline (call): no slot is free until it ends.
						this.state.work.await();
						continue;
					}
					long wait = this.state.pacing.nanosUntilReady(System.nanoTime(), this.state.isOpen(), this.state.busy,
							this.state.queue);
					if (wait <= 0) {
						break;
					}
					this.state.work.awaitNanos(wait);
				}
			}
			catch (InterruptedException ex) {
				// Dispatchers are never interrupted by the batcher; someone else did: stop this one.
				Thread.currentThread().interrupt();
				return false;
			}
			finally {
				this.state.idleDispatchers--;
			}
			this.state.reserve();
			return true;
		}
		finally {
			this.state.lock.unlock();
		}
	}

	/** Leases a stream, takes a batch and runs it; the reservation ends here. */
	private void runOne() {
		StreamLease lease = null;
		RuntimeException noStream = null;
		try {
			lease = this.streams.acquire(this.priority, this.acquireTimeout);
		}
		catch (RuntimeException ex) {
			noStream = ex;
		}
		List<Item<I, O>> batch;
		List<Item<I, O>> dropped = new ArrayList<>();
		List<Item<I, O>> expiredNow = new ArrayList<>();
		long start = System.nanoTime();
		this.state.lock.lock();
		try {
			batch = this.state.queue.take(start, this.maxBatchSize, dropped, expiredNow);
			this.state.counters.cancelled(dropped.size());
			this.state.counters.expired(expiredNow.size());
			if (!batch.isEmpty()) {
				this.state.started(batch);
			}
		}
		finally {
			this.state.lock.unlock();
		}
		this.deadlines.expire(expiredNow, start);
		if (batch.isEmpty()) {
			if (lease != null) {
				lease.close();
			}
			this.state.lock.lock();
			try {
				this.state.busy--;
			}
			finally {
				this.state.lock.unlock();
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
	private void execute(List<Item<I, O>> batch, @Nullable StreamLease lease, @Nullable RuntimeException noStream,
			long start) {
		GpuListener listener = this.listener;
		listener.batchDispatched(this.name, batch.size());
		for (Item<I, O> item : batch) {
			listener.batchItemWaited(this.name, start - item.enqueuedAt);
		}
		Object[] results = new Object[batch.size()];
		Throwable[] failures = new Throwable[batch.size()];
		if (lease == null) {
			Arrays.fill(failures, noStream);
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
		this.state.lock.lock();
		try {
			this.state.busy--;
			this.state.pacing.batchEnded(size, elapsed);
			this.state.signalWorkIfQueued();
		}
		finally {
			this.state.lock.unlock();
		}
	}

	/**
	 * Ends a reservation, booking the items its batch completed ({@code ok}, {@code bad}): the batch
	 * no longer runs, and a waiting dispatcher may now be ready.
	 */
	private void finish(List<Item<I, O>> batch, int ok, int bad) {
		this.state.lock.lock();
		try {
			this.state.counters.completed(ok, bad);
			this.state.running.remove(batch);
			this.state.inFlight--;
			this.state.signalWorkIfQueued();
			this.state.finished.signalAll();
		}
		finally {
			this.state.lock.unlock();
		}
	}

}
