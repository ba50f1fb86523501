package dev.gpucompute.sample.search;

import org.jspecify.annotations.Nullable;

import dev.gpucompute.DeviceBuffer;

/**
 * A run of a collection's slots held on one device: slots {@code [firstSlot, firstSlot + rows)}
 * of the collection are rows {@code [0, rows)} of {@link #storage}. A collection on one device has
 * one shard; one that outgrew its device has several, on different devices, in slot order (as
 * FAISS's {@code IndexShards} splits an index), and only the last one grows.
 *
 * <p>Guarded by its collection's lock, like every other part of a {@link VectorCollection}.
 */
final class Shard {

	final SearchDevice device;

	/** The collection slot of row 0. */
	final int firstSlot;

	/** Device storage of {@link #capacityRows} rows; {@code null} until allocated. */
	@Nullable DeviceBuffer storage;

	long capacityRows;

	/** Rows in use. */
	int rows;

	/** Bytes of the device's budget this shard holds (at least its capacity). */
	long reservedBytes;

	Shard(SearchDevice device, int firstSlot) {
		this.device = device;
		this.firstSlot = firstSlot;
	}

	/** The device storage of a shard that was given capacity: every shard that holds rows. */
	DeviceBuffer storage() {
		DeviceBuffer buffer = this.storage;
		if (buffer == null) {
			throw new IllegalStateException("No device storage allocated for " + this);
		}
		return buffer;
	}

	KnnEngine engine() {
		return this.device.engine();
	}

	@Override
	public String toString() {
		return "Shard[device " + this.device.ordinal() + ", slots " + this.firstSlot + "+" + this.rows + " of "
				+ this.capacityRows + "]";
	}

}
