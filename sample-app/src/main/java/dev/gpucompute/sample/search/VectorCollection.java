package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import org.jspecify.annotations.Nullable;

import dev.gpucompute.sample.storage.StorageFailure;
import dev.gpucompute.sample.storage.WriteAheadLog;

/**
 * One collection: vectors of a fixed dimension, each with a string id, held in device memory (the
 * only full copy of the vectors in the process; snapshots are written from it in bounded chunks).
 *
 * <p>Layout: slot {@code s} holds row {@code s} of a row-major {@code capacity x dimension} float32
 * matrix on the device. Adding a vector appends a slot; replacing one overwrites its slot, so slots
 * never move and the kernels' tie-break by slot is stable. Ids are kept compactly: an array in slot
 * order plus an open-addressing table of slots (no boxed integers, no map entries), about
 * 60 bytes per id for short ids.
 *
 * <p>Concurrency: every field below the lock is guarded by it. Searches hold the read lock until
 * their device work is complete (the storage cannot be overwritten or freed under them); writes,
 * deletion and growth hold the write lock and also finish their device work before releasing it,
 * so a write that was answered is visible to every later search. The {@link CollectionStore} and
 * {@link KnnEngine} take the lock; this class only holds the state. The store owns {@link #log}.
 */
public final class VectorCollection {

	private final String name;

	private final int dimension;

	private final Metric metric;

	final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

	/**
	 * Held by the one thread that appends to the log, applies logged writes to the device, folds
	 * the log or deletes the collection; taken before {@link #lock}. Searches never take it, so they
	 * go on while a write's log record is forced to disk.
	 */
	final ReentrantLock commitLock = new ReentrantLock();

	/** Writes waiting to be committed, in arrival order: the commit lock's holder takes them all. */
	final Queue<CollectionWriter.Pending> queued = new ConcurrentLinkedQueue<>();

	/**
	 * The write-ahead log; set once when the collection is opened or created, closed by the store.
	 * Null only while a collection is being opened or created, or after that failed.
	 */
	@Nullable WriteAheadLog log;

	/** Why the last fold failed, or {@code null} (set under the commit lock, read by the health indicator). */
	volatile @Nullable StorageFailure foldFailure;

	/** {@link System#nanoTime} of the last fold that failed. */
	volatile long foldFailedAt;

	/** Writes the storage refused since the last one it took (commit lock), for logging. */
	long refusedInARow;

	// ---- guarded by lock ------------------------------------------------------------------

	/** Ids in slot order; the first {@code size} are in use. */
	private String[] ids = new String[0];

	private int size;

	/** Open addressing: slot + 1 of the id hashed there, 0 when empty; length a power of two. */
	private int[] table = new int[16];

	/**
	 * Where the vectors live: shards in slot order, each on one device; empty until the first vector
	 * arrives. Every shard but the last is full (its rows fill its capacity), so slot {@code s} is in
	 * the shard whose {@code firstSlot} is the greatest not above {@code s}.
	 */
	final List<Shard> shards = new ArrayList<>();

	boolean closed;

	VectorCollection(String name, int dimension, Metric metric) {
		this.name = name;
		this.dimension = dimension;
		this.metric = metric;
	}

	public String name() {
		return this.name;
	}

	/** The write-ahead log of a collection that was opened or created: every one the store holds. */
	WriteAheadLog wal() {
		WriteAheadLog wal = this.log;
		if (wal == null) {
			throw new IllegalStateException("Collection '" + this.name + "' has no write-ahead log");
		}
		return wal;
	}

	public int dimension() {
		return this.dimension;
	}

	public Metric metric() {
		return this.metric;
	}

	/** Number of vectors; read under the lock for a consistent answer. */
	int size() {
		return this.size;
	}

	/** The id of a slot (lock held). */
	String idAt(int slot) {
		return this.ids[slot];
	}

	/** The slot of an id, or -1 (lock held). */
	int slotOf(String id) {
		int mask = this.table.length - 1;
		for (int i = spread(id.hashCode()) & mask;; i = (i + 1) & mask) {
			int entry = this.table[i];
			if (entry == 0) {
				return -1;
			}
			if (this.ids[entry - 1].equals(id)) {
				return entry - 1;
			}
		}
	}

	/** Ids in slot order (read lock held): the first {@code size()} entries; do not modify. */
	String[] idArray() {
		return this.ids;
	}

	/** Ids in slot order, copied (lock held). */
	List<String> ids() {
		return new ArrayList<>(Arrays.asList(this.ids).subList(0, this.size));
	}

	/** Makes room for {@code capacity} ids without re-allocating (loading, lock held). */
	void reserveIds(int capacity) {
		if (capacity > this.ids.length) {
			this.ids = Arrays.copyOf(this.ids, capacity);
		}
		int wanted = tableSizeFor(capacity);
		if (wanted > this.table.length) {
			rehash(wanted);
		}
	}

	/**
	 * Appends new ids at the slots from {@code size()} on, in order, exactly as {@link #plan}
	 * assigned them, after the write's device part succeeded (write lock held).
	 */
	void appendIds(List<String> newIds) {
		int newSize = this.size + newIds.size();
		if (newSize > this.ids.length) {
			this.ids = Arrays.copyOf(this.ids, Math.max(newSize, Math.min(Integer.MAX_VALUE - 8, 2 * this.ids.length)));
		}
		int wanted = tableSizeFor(newSize);
		if (wanted > this.table.length) {
			rehash(wanted);
		}
		int mask = this.table.length - 1;
		for (String id : newIds) {
			int slot = this.size++;
			this.ids[slot] = id;
			int i = spread(id.hashCode()) & mask;
			while (this.table[i] != 0) {
				i = (i + 1) & mask;
			}
			this.table[i] = slot + 1;
		}
	}

	/** A table at most half full: linear probing stays short. */
	private static int tableSizeFor(int entries) {
		long wanted = Math.max(16, Long.highestOneBit(Math.max(1, 2L * entries - 1)) << 1);
		return (int) Math.min(wanted, 1 << 30);
	}

	private void rehash(int length) {
		int[] table = new int[length];
		int mask = length - 1;
		for (int slot = 0; slot < this.size; slot++) {
			int i = spread(this.ids[slot].hashCode()) & mask;
			while (table[i] != 0) {
				i = (i + 1) & mask;
			}
			table[i] = slot + 1;
		}
		this.table = table;
	}

	private static int spread(int hash) {
		return (hash ^ (hash >>> 16)) * 0x9E3779B1;
	}

	/**
	 * The slots a batch of ids will occupy (lock held): existing ids keep theirs, new ones are
	 * appended in order. Ids within a batch are unique (checked before).
	 * @return the slot per row, and the new ids in the order they are appended
	 */
	Plan plan(List<String> batchIds) {
		int[] slotsOfRows = new int[batchIds.size()];
		List<String> added = new ArrayList<>();
		int next = this.size;
		for (int r = 0; r < slotsOfRows.length; r++) {
			String id = batchIds.get(r);
			int slot = slotOf(id);
			if (slot >= 0) {
				slotsOfRows[r] = slot;
			}
			else {
				slotsOfRows[r] = next++;
				added.add(id);
			}
		}
		return new Plan(slotsOfRows, added);
	}

	/** Where each row of a write goes. */
	record Plan(int[] slots, List<String> added) {

		int replaced() {
			return this.slots.length - this.added.size();
		}

	}

	/** The shard holding a slot (lock held). */
	Shard shardOf(int slot) {
		int low = 0;
		int high = this.shards.size() - 1;
		while (low < high) {
			int mid = (low + high + 1) >>> 1;
			if (this.shards.get(mid).firstSlot <= slot) {
				low = mid;
			}
			else {
				high = mid - 1;
			}
		}
		return this.shards.get(low);
	}

	/**
	 * Calls {@code action} for each shard's part of the rows {@code [first, first + count)} (lock
	 * held), in order: the shard, the first row within it, how many rows, and how many rows of the
	 * range came before.
	 */
	void forRange(long first, long count, RangeAction action) {
		long done = 0;
		while (done < count) {
			int slot = (int) (first + done);
			Shard shard = shardOf(slot);
			long local = slot - shard.firstSlot;
			long rows = Math.min(count - done, shard.capacityRows - local);
			if (rows <= 0) {
				throw new IllegalStateException("slot " + slot + " is beyond " + shard);
			}
			action.accept(shard, local, (int) rows, done);
			done += rows;
		}
	}

	/** A part of a row range that one shard holds. */
	@FunctionalInterface
	interface RangeAction {

		void accept(Shard shard, long firstRow, int rows, long offset);

	}

	/**
	 * The shards that hold vectors (lock held): all but those a group commit allocated for writes it
	 * has not applied yet, which are empty and last. Searches and {@link #info} see only these.
	 */
	List<Shard> filledShards() {
		int filled = this.shards.size();
		while (filled > 0 && this.shards.get(filled - 1).rows == 0) {
			filled--;
		}
		return (filled == this.shards.size()) ? this.shards : this.shards.subList(0, filled);
	}

	CollectionInfo info() {
		List<Shard> filled = filledShards();
		List<CollectionInfo.Placement> placements = new ArrayList<>(filled.size());
		for (Shard shard : filled) {
			placements.add(new CollectionInfo.Placement(shard.device.ordinal(), shard.rows));
		}
		return new CollectionInfo(this.name, this.dimension, this.metric, this.size, placements);
	}

	@Override
	public String toString() {
		return "VectorCollection[" + this.name + ", dim=" + this.dimension + ", " + this.metric.jsonName() + "]";
	}

}
