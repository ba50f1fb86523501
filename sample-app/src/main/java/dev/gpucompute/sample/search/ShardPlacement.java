package dev.gpucompute.sample.search;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * Decides where a collection's vectors live: which device holds each {@link Shard} and how much of
 * that device's budget it reserves.
 *
 * <ul>
 * <li>A new collection goes to the device with the most free budget (ties: the lowest ordinal).</li>
 * <li>A collection grows in its last shard, doubling its capacity where the budget allows (growth
 * stays amortised), else by what it needs.</li>
 * <li>When the last shard's device has no room left, the rest goes to a new shard on the device
 * with the most free budget, as FAISS's {@code IndexShards} spreads an index over GPUs. With one
 * device that is simply a full budget: 422, as before there were shards.</li>
 * </ul>
 *
 * <p>Budget is reserved before device memory is allocated, so a write that cannot fit anywhere is
 * refused before it changes anything. Callers hold the collection's write lock; the budgets are
 * shared by all collections and thread-safe, so a reservation can lose a race with another
 * collection's, which this class retries.
 */
final class ShardPlacement {

	/** Smallest device storage a shard starts with, in rows. */
	static final long MIN_CAPACITY_ROWS = 64;

	private final List<SearchDevice> devices;

	ShardPlacement(List<SearchDevice> devices) {
		if (devices.isEmpty()) {
			throw new IllegalArgumentException("At least one device is needed");
		}
		this.devices = List.copyOf(devices);
	}

	List<SearchDevice> devices() {
		return this.devices;
	}

	/** Rows the collection's reservations hold room for: the slot after its last shard's capacity. */
	static long reservedRows(VectorCollection collection) {
		if (collection.shards.isEmpty()) {
			return 0;
		}
		Shard last = collection.shards.get(collection.shards.size() - 1);
		return last.firstSlot + last.reservedBytes / rowBytes(collection);
	}

	/**
	 * Reserves budget so that the collection's shards hold room for {@code newSize} rows, growing
	 * the last shard and adding shards (without storage yet) as needed. Write lock held.
	 * @param doubling whether the last shard may grow to twice its capacity (writes; loading reserves
	 * exactly what it needs)
	 * @throws ServiceProblem 422 when the devices together have no room; nothing is reserved then
	 */
	void reserve(VectorCollection collection, long newSize, boolean doubling) {
		long rowBytes = rowBytes(collection);
		long maxRows = (Integer.MAX_VALUE - 8) / collection.dimension();
		long capacity = reservedRows(collection);
		if (newSize <= capacity) {
			return;
		}
		long needed = newSize - capacity;
		Shard last = collection.shards.isEmpty() ? null : collection.shards.get(collection.shards.size() - 1);
		long lastReservedBefore = (last != null) ? last.reservedBytes : 0;
		List<Shard> created = new ArrayList<>();
		try {
			if (last != null) {
				long lastRows = last.reservedBytes / rowBytes;
				long exact = Math.min(needed, maxRows - lastRows);
				long wanted = doubling ? Math.min(Math.max(lastRows, exact), maxRows - lastRows) : exact;
				long granted = grant(last.device, wanted, exact, rowBytes, this.devices.size() > 1);
				last.reservedBytes += granted * rowBytes;
				needed -= Math.min(granted, needed);
			}
			while (needed > 0) {
				SearchDevice device = mostFree(rowBytes, (last != null && reservedRows(collection) - last.firstSlot
						< maxRows) ? last.device : null);
				if (device == null) {
					throw noRoom(collection, newSize, rowBytes);
				}
				long exact = Math.min(needed, maxRows);
				long wanted = Math.min(Math.max(exact, MIN_CAPACITY_ROWS), maxRows);
				long granted = grant(device, wanted, exact, rowBytes, true);
				if (granted == 0) {
					continue; // another collection took the room meanwhile: look again
				}
				Shard shard = new Shard(device, (int) reservedRows(collection));
				shard.reservedBytes = granted * rowBytes;
				collection.shards.add(shard);
				created.add(shard);
				last = shard;
				needed -= Math.min(granted, needed);
			}
		}
		catch (RuntimeException ex) {
			for (Shard shard : created) {
				collection.shards.remove(shard);
				shard.device.budget().release(shard.reservedBytes);
			}
			Shard previous = collection.shards.isEmpty() ? null : collection.shards.get(collection.shards.size() - 1);
			if (previous != null && previous.reservedBytes != lastReservedBefore) {
				previous.device.budget().release(previous.reservedBytes - lastReservedBefore);
				previous.reservedBytes = lastReservedBefore;
			}
			throw ex;
		}
	}

	/**
	 * After a write's device work, failed or not (write lock held): each shard's reservation
	 * follows its allocation, and shards that hold no rows (added by a write that failed) are freed
	 * and dropped.
	 */
	void settle(VectorCollection collection) {
		fit(collection, (shard) -> shard.rows == 0);
	}

	/**
	 * After one write of a group commit failed to get room while earlier ones of the group hold
	 * theirs (write lock held): each shard's reservation follows its allocation and shards without
	 * storage are dropped, but the storage allocated for the other writes stays ({@link #settle}
	 * trims it once the group's writes are applied).
	 */
	void trim(VectorCollection collection) {
		fit(collection, (shard) -> shard.rows == 0 && shard.capacityRows == 0);
	}

	private void fit(VectorCollection collection, java.util.function.Predicate<Shard> drop) {
		long rowBytes = rowBytes(collection);
		for (Iterator<Shard> it = collection.shards.iterator(); it.hasNext();) {
			Shard shard = it.next();
			if (drop.test(shard)) {
				shard.engine().storage().free(shard);
				shard.device.budget().release(shard.reservedBytes);
				shard.reservedBytes = 0;
				it.remove();
			}
			else {
				long allocated = shard.capacityRows * rowBytes;
				shard.device.budget().release(shard.reservedBytes - allocated);
				shard.reservedBytes = allocated;
			}
		}
	}

	/** Frees every shard's storage and budget (write lock held). */
	void release(VectorCollection collection) {
		for (Shard shard : collection.shards) {
			shard.engine().storage().free(shard);
			shard.device.budget().release(shard.reservedBytes);
			shard.reservedBytes = 0;
		}
		collection.shards.clear();
	}

	/**
	 * Reserves {@code wanted} rows on the device, else {@code exact}, else (when {@code partial})
	 * as many as fit.
	 * @return the rows reserved, possibly 0
	 */
	private static long grant(SearchDevice device, long wanted, long exact, long rowBytes, boolean partial) {
		if (wanted > 0 && device.budget().tryReserve(wanted * rowBytes)) {
			return wanted;
		}
		if (exact > 0 && exact < wanted && device.budget().tryReserve(exact * rowBytes)) {
			return exact;
		}
		while (partial) {
			long fit = Math.min(exact, device.freeBytes() / rowBytes);
			if (fit <= 0) {
				return 0;
			}
			if (device.budget().tryReserve(fit * rowBytes)) {
				return fit;
			}
		}
		return 0;
	}

	/**
	 * The device with the most free budget that fits a row, other than {@code excluded} (the last
	 * shard's device, which would rather have grown that shard); ties go to the lowest ordinal.
	 */
	private @Nullable SearchDevice mostFree(long rowBytes, @Nullable SearchDevice excluded) {
		SearchDevice best = null;
		for (SearchDevice device : this.devices) {
			if (device != excluded && device.freeBytes() >= rowBytes
					&& (best == null || device.freeBytes() > best.freeBytes())) {
				best = device;
			}
		}
		return best;
	}

	private ServiceProblem noRoom(VectorCollection collection, long newSize, long rowBytes) {
		long budget = 0;
		long reserved = 0;
		for (SearchDevice device : this.devices) {
			budget += device.budget().budgetBytes();
			reserved += device.budget().reservedBytes();
		}
		return ServiceProblem.memoryBudget(collection.name(), newSize, newSize * rowBytes, budget, reserved);
	}

	private static long rowBytes(VectorCollection collection) {
		return (long) collection.dimension() * Float.BYTES;
	}

}
