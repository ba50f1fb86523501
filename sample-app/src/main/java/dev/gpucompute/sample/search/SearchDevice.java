package dev.gpucompute.sample.search;

/**
 * One device the service keeps collections on: its ordinal, the {@link KnnEngine} that runs work
 * on it (its launcher and stream pool) and its share of {@code sample.memory-budget}.
 *
 * <p>With {@code gpu.devices} naming several devices the store has one per device, places each
 * new collection on the one with the most free budget and spreads a collection that outgrows one
 * device over several as {@link Shard}s. Immutable; the engine and budget are thread-safe.
 *
 * @param ordinal the device's ordinal ({@code gpu.devices})
 * @param engine runs writes, reads and searches on this device
 * @param budget the device memory collections may hold on this device
 */
public record SearchDevice(int ordinal, KnnEngine engine, DeviceMemoryBudget budget) {

	/** Budget bytes not yet reserved. */
	long freeBytes() {
		return this.budget.budgetBytes() - this.budget.reservedBytes();
	}

}
