package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantReadWriteLock;

import dev.gpucompute.DeviceBuffer;

/**
 * One collection: vectors of a fixed dimension, each with a string id, held in device memory for
 * searching and mirrored in host memory for persistence.
 *
 * <p>Layout: slot {@code s} holds row {@code s} of a row-major {@code capacity x dimension} float32
 * matrix, on the device and in the host mirror alike. Adding a vector appends a slot; replacing one
 * overwrites its slot, so slots never move and the kernels' tie-break by slot is stable.
 *
 * <p>Concurrency: every field below the lock is guarded by it. Searches hold the read lock until
 * their device work is complete (the storage cannot be overwritten or freed under them); writes,
 * deletion and growth hold the write lock and also finish their device work before releasing it,
 * so a write that was answered is visible to every later search. The {@link CollectionStore} and
 * {@link KnnEngine} take the lock; this class only holds the state.
 */
public final class VectorCollection {

	private final String name;

	private final int dimension;

	private final Metric metric;

	final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();

	/** Set by writes (under the write lock), cleared by the flusher (under the read lock). */
	final AtomicBoolean dirty = new AtomicBoolean();

	// ---- guarded by lock ------------------------------------------------------------------

	private final List<String> ids = new ArrayList<>();

	private final Map<String, Integer> slots = new HashMap<>();

	/** Host mirror: {@code ids.size() * dimension} values in use. */
	private float[] host = new float[0];

	/** Device storage, {@code deviceRows} rows; {@code null} until the first vector arrives. */
	DeviceBuffer device;

	long deviceRows;

	/** Bytes of the {@link DeviceMemoryBudget} this collection holds. */
	long reservedBytes;

	boolean closed;

	VectorCollection(String name, int dimension, Metric metric) {
		this.name = name;
		this.dimension = dimension;
		this.metric = metric;
	}

	public String name() {
		return this.name;
	}

	public int dimension() {
		return this.dimension;
	}

	public Metric metric() {
		return this.metric;
	}

	/** Number of vectors; read under the lock for a consistent answer. */
	int size() {
		return this.ids.size();
	}

	/** The id of a slot (lock held). */
	String idAt(int slot) {
		return this.ids.get(slot);
	}

	/** The slot of an id, or -1 (lock held). */
	int slotOf(String id) {
		Integer slot = this.slots.get(id);
		return (slot != null) ? slot : -1;
	}

	/** Ids in slot order (read lock held); a live view, copy it before releasing the lock. */
	List<String> ids() {
		return this.ids;
	}

	/** The host mirror; the first {@code size() * dimension} values are in use (read lock held). */
	float[] hostVectors() {
		return this.host;
	}

	/**
	 * Applies a write to the host side after its device part succeeded (write lock held): new ids get
	 * the slots from {@code size()} on, in order, exactly as {@link #plan} assigned them.
	 */
	void applyHost(List<String> newIds, int[] slotsOfRows, float[] rows) {
		int newSize = this.ids.size() + newIds.size();
		long needed = (long) newSize * this.dimension;
		if (needed > this.host.length) {
			long grown = Math.max(needed, Math.min((long) Integer.MAX_VALUE - 8, 2L * this.host.length));
			this.host = Arrays.copyOf(this.host, (int) grown);
		}
		for (String id : newIds) {
			this.slots.put(id, this.ids.size());
			this.ids.add(id);
		}
		for (int r = 0; r < slotsOfRows.length; r++) {
			System.arraycopy(rows, r * this.dimension, this.host, slotsOfRows[r] * this.dimension, this.dimension);
		}
	}

	/**
	 * The slots a batch of ids will occupy (lock held): existing ids keep theirs, new ones are
	 * appended in order.
	 * @return the slot per row, and the new ids in the order they are appended
	 */
	Plan plan(List<String> batchIds) {
		int[] slotsOfRows = new int[batchIds.size()];
		List<String> added = new ArrayList<>();
		int next = this.ids.size();
		for (int r = 0; r < slotsOfRows.length; r++) {
			String id = batchIds.get(r);
			Integer slot = this.slots.get(id);
			if (slot != null) {
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

	CollectionInfo info() {
		return new CollectionInfo(this.name, this.dimension, this.metric, this.ids.size());
	}

	@Override
	public String toString() {
		return "VectorCollection[" + this.name + ", dim=" + this.dimension + ", " + this.metric.jsonName() + "]";
	}

}
