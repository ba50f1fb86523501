package dev.gpucompute.internal.batch;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.batch.BatchQueue.Item;

/**
 * What the parts of one {@link GpuBatcher} share, and the one lock that guards it all: the queue,
 * the batches running, whether the batcher still accepts items, the dispatch slots and the totals.
 * {@link BatchAdmission} queues items, {@link BatchDispatch} reserves slots and takes batches,
 * {@link BatchDeadlines} drops expired and cancelled items, {@link BatchDrain} shuts down; each
 * decides under {@link #lock} and completes futures only after releasing it.
 *
 * <p>Every field but the lock and its conditions is guarded by {@link #lock}, and so are the methods
 * here: callers hold it. One lock, not one per part, because the decisions span the parts: whether a
 * dispatcher may take a batch looks at the queue, the slots in use and the open flag together, and a
 * submission checks the open flag and the queue's bound in the same step that queues the item.
 *
 * @param <I> item type
 * @param <O> result type
 */
final class BatcherState<I, O> {

	final ReentrantLock lock = new ReentrantLock();

	/** Idle dispatchers wait here for a batch to become ready. */
	final Condition work = this.lock.newCondition();

	/** {@link GpuBatcher#awaitTermination} waits here: signalled whenever items leave or slots free up. */
	final Condition finished = this.lock.newCondition();

	final BatchQueue<I, O> queue = new BatchQueue<>(new DeadlineHeap<>());

	/** Items of the batches being run, to abandon at close. */
	final Set<List<Item<I, O>>> running = Collections.newSetFromMap(new IdentityHashMap<>());

	final BatchCounters counters = new BatchCounters();

	/** Holding for fuller batches and the retry-after hint, from the recent batches. */
	final BatchPacing pacing;

	/** Whether items are accepted; once false, it stays false. */
	private boolean open = true;

	/** Dispatchers (or inline callers) that reserved a batch: leasing its stream, running it or completing its futures. */
	int inFlight;

	/** Batches reserved whose results are not out yet: what holding for a fuller batch looks at. */
	int busy;

	/** Dispatchers waiting on {@link #work}. */
	int idleDispatchers;

	BatcherState(BatchPacing pacing) {
		this.pacing = pacing;
	}

	/** Whether the batcher accepts items (not shut down). */
	boolean isOpen() {
		return this.open;
	}

	/** Stops accepting items; false when that had happened already. */
	boolean shutDown() {
		boolean was = this.open;
		this.open = false;
		return was;
	}

	/** Shut down, nothing queued and no batch reserved: what {@link GpuBatcher#awaitTermination} waits for. */
	boolean isTerminated() {
		return !this.open && this.queue.size() == 0 && this.inFlight == 0;
	}

	/** A dispatcher or an inline caller takes a slot for a batch: in flight and busy until the batch ends. */
	void reserve() {
		this.inFlight++;
		this.busy++;
	}

	/** {@code batch} starts in a reserved slot: it runs (abandoned at close if still running) and counts as dispatched. */
	void started(List<Item<I, O>> batch) {
		this.running.add(batch);
		this.counters.dispatched(batch.size());
	}

	/** Wakes one idle dispatcher when items wait: a batch ended or a slot freed, so one may be ready now. */
	void signalWorkIfQueued() {
		if (this.queue.size() > 0 && this.idleDispatchers > 0) {
			this.work.signal();
		}
	}

}
