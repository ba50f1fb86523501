package dev.gpucompute.sample.search;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.StorageFailure;
import dev.gpucompute.sample.storage.WriteAheadLog;

/**
 * The write path of the {@link CollectionStore}: log first, then device. A write is applied to the
 * device storage only after its log record is on disk, so a write whose record is not durable is
 * never visible to any search or count, on any device or shard, and nothing has to be undone on a
 * device.
 *
 * <p>Group commit by combining: a writer queues its write on the collection and takes the
 * collection's commit lock; whoever holds it commits every queued write as one group, so writes that
 * arrive while a force runs share the next one. A group goes through three steps:
 * <ol>
 * <li>Room (write lock, no disk I/O): each write's new rows get budget and device storage
 * ({@link ShardPlacement}); a write that does not fit is refused (422) before anything is logged.
 * Storage allocated here holds no rows yet, so searches do not see it
 * ({@link VectorCollection#filledShards}).</li>
 * <li>Log (commit lock only: searches go on): each write is appended as one record, then one force
 * covers the group. A write whose append fails is refused and its record cut off; when the force
 * fails, every record of the group is cut off ({@link WriteAheadLog#discardFrom}) and the group is
 * refused. Refused writes are answered 507 (no space) or 503 with {@code Retry-After} (any other
 * I/O failure), saying that nothing was stored.</li>
 * <li>Apply (write lock): the durable writes go to the device in log order, each planned against
 * the ids as the replay will plan it, then become visible together when the lock is released. A
 * write the device refuses now (a lost device, no stream within the timeout) is cut off the log
 * with every later one of the group before it is answered, so the log never holds a write that was
 * answered as failed.</li>
 * </ol>
 *
 * <p>Thread-safe; one per store.
 */
final class CollectionWriter {

	private static final Logger log = LoggerFactory.getLogger(CollectionWriter.class);

	private final ShardPlacement placement;

	private final LogFolder folder;

	private final CollectionFiles files;

	private final long foldBytes;

	private final LongAdder refusedWrites = new LongAdder();

	private volatile @Nullable String lastRefusal;

	private volatile @Nullable Instant lastRefusalAt;

	CollectionWriter(ShardPlacement placement, LogFolder folder, CollectionFiles files, long foldBytes) {
		this.placement = placement;
		this.folder = folder;
		this.files = files;
		this.foldBytes = foldBytes;
	}

	/** A write waiting to be committed, and its outcome once it was. */
	static final class Pending {

		final List<String> ids;

		final float[] rows;

		/** Logical end of its log record, once appended. */
		long logEnd;

		private volatile boolean done;

		private CollectionStore.@Nullable Upserted result;

		private @Nullable RuntimeException failure;

		Pending(List<String> ids, float[] rows) {
			this.ids = ids;
			this.rows = rows;
		}

		void succeed(CollectionStore.Upserted result) {
			this.result = result;
			this.done = true;
		}

		void fail(RuntimeException failure) {
			this.failure = failure;
			this.done = true;
		}

		boolean done() {
			return this.done;
		}

		/** Once {@link #done()}: the result, or the failure thrown. */
		CollectionStore.Upserted outcome() {
			if (this.failure != null) {
				throw this.failure;
			}
			if (this.result == null) {
				throw new IllegalStateException("The write has not been committed yet");
			}
			return this.result;
		}

	}

	/**
	 * Adds or replaces rows (validated and prepared by the store) and returns once they are on disk
	 * and visible, or throws having stored nothing of them.
	 * @throws ServiceProblem 404 (deleted meanwhile), 422 (no room), 503 (busy, storage unavailable),
	 * 507 (no space)
	 */
	CollectionStore.Upserted upsert(VectorCollection collection, List<String> ids, float[] rows) {
		Pending write = new Pending(ids, rows);
		collection.queued.add(write);
		collection.commitLock.lock();
		try {
			if (!write.done()) {
				commitQueued(collection);
			}
		}
		finally {
			collection.commitLock.unlock();
		}
		return write.outcome();
	}

	/** Commits every queued write as one group (commit lock held); each gets its outcome. */
	private void commitQueued(VectorCollection collection) {
		List<Pending> group = new ArrayList<>();
		for (Pending write; (write = collection.queued.poll()) != null;) {
			group.add(write);
		}
		try {
			commit(collection, group);
		}
		catch (RuntimeException | Error ex) {
			// Whatever went wrong, no writer may wait for an outcome that never comes.
			RuntimeException failure = (ex instanceof RuntimeException runtime) ? runtime
					: new IllegalStateException("Committing writes failed", ex);
			for (Pending write : group) {
				if (!write.done()) {
					write.fail(failure);
				}
			}
			if (ex instanceof Error error) {
				throw error;
			}
		}
	}

	private void commit(VectorCollection collection, List<Pending> group) {
		if (collection.closed) {
			group.forEach((write) -> write.fail(ServiceProblem.unknownCollection(collection.name())));
			return;
		}
		StorageFailure unusable = this.folder.usable(collection);
		if (unusable != null) {
			refuse(collection, group, unusable);
			return;
		}
		List<Pending> admitted = makeRoom(collection, group);
		Logged logged = new Logged(collection.wal().end(), List.of());
		try {
			logged = log(collection, admitted);
		}
		finally {
			// Also after an unexpected failure: the room step's unused storage is released.
			apply(collection, logged);
		}
		if (collection.wal().size() > this.foldBytes) {
			this.folder.foldSoon(collection);
		}
	}

	// ---- step 1: room ----------------------------------------------------------------------------

	/** Reserves budget and allocates device storage for each write's new rows (write lock). */
	private List<Pending> makeRoom(VectorCollection collection, List<Pending> group) {
		List<Pending> admitted = new ArrayList<>(group.size());
		Set<String> added = new HashSet<>();
		collection.lock.writeLock().lock();
		try {
			long size = collection.size();
			for (Pending write : group) {
				List<String> fresh = new ArrayList<>();
				for (String id : write.ids) {
					if (collection.slotOf(id) < 0 && !added.contains(id)) {
						fresh.add(id);
					}
				}
				try {
					if (!fresh.isEmpty()) {
						reserve(collection, size + added.size() + fresh.size());
					}
					added.addAll(fresh);
					admitted.add(write);
				}
				catch (RuntimeException ex) {
					this.placement.trim(collection);
					write.fail(ex);
				}
			}
		}
		finally {
			collection.lock.writeLock().unlock();
		}
		return admitted;
	}

	/**
	 * Reserves budget for {@code newSize} rows and allocates every shard's storage to its
	 * reservation (write lock held); nothing becomes visible.
	 * @throws ServiceProblem 422 when the budgets or the devices have no room, 503 when no stream was free
	 */
	private void reserve(VectorCollection collection, long newSize) {
		int dim = collection.dimension();
		long rowBytes = (long) dim * Float.BYTES;
		try {
			this.placement.reserve(collection, newSize, true);
			// Every allocation before any row moves: a device without room fails the write here.
			for (Shard shard : collection.shards) {
				long capacity = shard.reservedBytes / rowBytes;
				if (capacity > shard.capacityRows) {
					shard.engine().storage().writeRaw(shard, dim, 0, ByteBuffer.allocate(0), capacity);
				}
			}
		}
		catch (GpuOutOfMemoryException ex) {
			throw ServiceProblem.deviceFull(collection.name(), newSize, newSize * rowBytes, ex.getMessage());
		}
	}

	// ---- step 2: log -----------------------------------------------------------------------------

	/** The writes whose records are durable, and where the group's records begin in the log. */
	private record Logged(long start, List<Pending> writes) {
	}

	/** Appends each write and forces them all (commit lock only); refuses those not durable. */
	private Logged log(VectorCollection collection, List<Pending> admitted) {
		long start = collection.wal().end();
		try {
			return log(collection, admitted, start);
		}
		catch (RuntimeException ex) {
			// Unexpected: the group fails (see commitQueued), so none of its records may stay.
			discard(collection, start, ex);
			throw ex;
		}
	}

	private Logged log(VectorCollection collection, List<Pending> admitted, long start) {
		WriteAheadLog wal = collection.wal();
		List<Pending> appended = new ArrayList<>(admitted.size());
		for (Pending write : admitted) {
			try {
				write.logEnd = wal.appendUpsert(write.ids.toArray(String[]::new), write.ids.size(),
						collection.dimension(), write.rows);
				appended.add(write);
			}
			catch (IOException ex) {
				// Cut off already (or the log is broken): nothing of this write is in the log.
				refuse(collection, List.of(write), StorageFailure.of(ex, this.files.directory(), recordBytes(write)));
				if (wal.broken()) {
					this.folder.recover(collection);
				}
			}
		}
		if (appended.isEmpty()) {
			return new Logged(start, appended);
		}
		try {
			wal.sync(appended.get(appended.size() - 1).logEnd);
			return new Logged(start, appended);
		}
		catch (IOException ex) {
			// The log is broken now; the group's records must not come back at a replay.
			discard(collection, start, ex);
			refuse(collection, appended, StorageFailure.of(ex, this.files.directory(), 0));
			this.folder.recover(collection);
			return new Logged(start, List.of());
		}
	}

	private static long recordBytes(Pending write) {
		long idBytes = 0;
		for (String id : write.ids) {
			idBytes += id.getBytes(StandardCharsets.UTF_8).length;
		}
		return 8 + WriteAheadLog.payloadBytes(write.ids.size(), write.rows.length / Math.max(1, write.ids.size()),
				idBytes);
	}

	/** Cuts the log back to {@code position}; when that fails, the next snapshot drops the records. */
	private void discard(VectorCollection collection, long position, Exception cause) {
		try {
			collection.wal().discardFrom(position);
		}
		catch (IOException | RuntimeException ex) {
			cause.addSuppressed(ex);
			log.error("Collection '{}': cutting the records of refused writes off its write-ahead log failed ({}); they "
					+ "are not applied, the log refuses writes until the next snapshot, which leaves them out; only a "
					+ "crash before that snapshot could replay them", collection.name(), ex.toString());
			this.folder.recover(collection);
		}
	}

	// ---- step 3: apply ---------------------------------------------------------------------------

	/** Applies the durable writes in log order (write lock), then trims what the group did not use. */
	private void apply(VectorCollection collection, Logged logged) {
		List<Pending> writes = logged.writes();
		int applied = 0;
		collection.lock.writeLock().lock();
		try {
			for (int i = 0; i < writes.size(); i++) {
				Pending write = writes.get(i);
				try {
					VectorCollection.Plan plan = applyRows(collection, write.ids, write.rows);
					write.succeed(new CollectionStore.Upserted(plan.added().size(), plan.replaced(), collection.size()));
					applied++;
				}
				catch (RuntimeException ex) {
					// Durable but not applied: cut it and the group's later records off, then answer.
					discard(collection, (i == 0) ? logged.start() : writes.get(i - 1).logEnd, ex);
					write.fail(ex);
					for (Pending later : writes.subList(i + 1, writes.size())) {
						later.fail(ServiceProblem.notApplied(collection.name(), ex, this.folder.retryAfter()));
					}
					break;
				}
			}
		}
		finally {
			this.placement.settle(collection);
			collection.lock.writeLock().unlock();
		}
		if (applied > 0 && collection.refusedInARow > 0) {
			log.info("Collection '{}' takes writes again, after {} were refused", collection.name(),
					collection.refusedInARow);
			collection.refusedInARow = 0;
		}
	}

	/**
	 * Adds or replaces rows on the device and records the new ids (write lock held, room
	 * allocated): a write that fails leaves the ids and every shard's size as they were.
	 */
	private static VectorCollection.Plan applyRows(VectorCollection collection, List<String> ids, float[] rows) {
		VectorCollection.Plan plan = collection.plan(ids);
		if (plan.slots().length == 0) {
			return plan;
		}
		int oldSize = collection.size();
		long newSize = (long) oldSize + plan.added().size();
		int dim = collection.dimension();
		long rowBytes = (long) dim * Float.BYTES;
		try {
			if (collection.shards.size() == 1) {
				Shard shard = collection.shards.get(0);
				shard.engine().storage().write(shard, dim, plan.slots(), rows, shard.reservedBytes / rowBytes);
			}
			else {
				writeSharded(collection, plan.slots(), rows);
			}
		}
		catch (GpuOutOfMemoryException ex) {
			throw ServiceProblem.deviceFull(collection.name(), newSize, newSize * rowBytes, ex.getMessage());
		}
		if (newSize > oldSize) {
			collection.forRange(oldSize, newSize - oldSize,
					(shard, localRow, count, offset) -> shard.rows = (int) (localRow + count));
		}
		collection.appendIds(plan.added());
		return plan;
	}

	/** Splits a write by shard: each gets its rows, at its own row numbers, in one device write. */
	private static void writeSharded(VectorCollection collection, int[] slots, float[] rows) {
		int dim = collection.dimension();
		Shard[] shardOfRow = new Shard[slots.length];
		Map<Shard, int[]> counts = new LinkedHashMap<>();
		for (int r = 0; r < slots.length; r++) {
			shardOfRow[r] = collection.shardOf(slots[r]);
			counts.computeIfAbsent(shardOfRow[r], (shard) -> new int[1])[0]++;
		}
		for (Map.Entry<Shard, int[]> entry : counts.entrySet()) {
			Shard shard = entry.getKey();
			int[] local = new int[entry.getValue()[0]];
			float[] part = new float[local.length * dim];
			int n = 0;
			for (int r = 0; r < slots.length; r++) {
				if (shardOfRow[r] == shard) {
					local[n] = slots[r] - shard.firstSlot;
					System.arraycopy(rows, r * dim, part, n * dim, dim);
					n++;
				}
			}
			shard.engine().storage().write(shard, dim, local, part, shard.reservedBytes / ((long) dim * Float.BYTES));
		}
	}

	/**
	 * Replays one logged write while the collection is loaded (write lock held): room, then device,
	 * nothing logged.
	 */
	void replay(VectorCollection collection, List<String> ids, float[] rows) {
		int fresh = 0;
		for (String id : ids) {
			if (collection.slotOf(id) < 0) {
				fresh++;
			}
		}
		try {
			if (fresh > 0) {
				reserve(collection, (long) collection.size() + fresh);
			}
			applyRows(collection, ids, rows);
		}
		finally {
			this.placement.settle(collection);
		}
	}

	// ---- refusals --------------------------------------------------------------------------------

	private void refuse(VectorCollection collection, List<Pending> writes, StorageFailure failure) {
		for (Pending write : writes) {
			write.fail(ServiceProblem.storage(collection.name(), ServiceProblem.writeNotStored(collection.name()),
					failure, this.folder.retryAfter()));
		}
		this.refusedWrites.add(writes.size());
		this.lastRefusal = "collection '" + collection.name() + "': " + failure.reason();
		this.lastRefusalAt = failure.at();
		if (collection.refusedInARow == 0) {
			log.error("Collection '{}': writes are refused, nothing of them is stored: {}. Reads go on; writes resume "
					+ "by themselves once the data directory {} takes them again", collection.name(), failure.reason(),
					this.files.directory(), failure.cause());
		}
		else {
			log.debug("Collection '{}': {} more writes refused: {}", collection.name(), writes.size(), failure.reason());
		}
		collection.refusedInARow += writes.size();
	}

	/** Writes refused by the storage since start-up. */
	long refusedWrites() {
		return this.refusedWrites.sum();
	}

	/** The last refusal ("collection 'c': reason"), or {@code null}. */
	@Nullable String lastRefusal() {
		return this.lastRefusal;
	}

	/** When the last refusal happened, or {@code null}. */
	@Nullable Instant lastRefusalAt() {
		return this.lastRefusalAt;
	}

}
