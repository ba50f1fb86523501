package dev.gpucompute.sample.search;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.PoolExhaustedException;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamPool;
import dev.gpucompute.StreamScope;

/**
 * The device storage of the shards on one device: writing rows into it (a copy straight into place, or
 * {@code knn_scatter} for rows at scattered slots), growing it (a new allocation and a
 * device-to-device copy), reading it back for a snapshot, and freeing it.
 *
 * <p><b>Threading.</b> Thread-safe; callers hold the collection's write lock for a write or a free and
 * its read lock for a read (see {@link VectorCollection}). Each call leases one pooled stream and
 * returns only after its device work is complete, also when it fails ({@link DeviceWork}), so no
 * work outlives the lock that protects the storage. When no stream becomes free within the device
 * timeout the call fails with {@link ServiceProblem#busy} (503).
 */
final class ShardStorage {

	private final GpuLauncher launcher;

	private final StreamPool pool;

	private final KnnLaunches launches;

	private final Duration deviceTimeout;

	/**
	 * @param pool the stream pool each call leases its stream from
	 * @param launches the device's kernels ({@code knn_scatter} writes scattered rows)
	 * @param deviceTimeout longest wait for a stream and for a call's device work
	 */
	ShardStorage(StreamPool pool, KnnLaunches launches, Duration deviceTimeout) {
		this.launcher = launches.launcher();
		this.pool = pool;
		this.launches = launches;
		this.deviceTimeout = deviceTimeout;
	}

	/**
	 * Writes {@code rows} (row-major, {@code slots.length} rows) at the given rows of a shard's
	 * device storage, first growing it to {@code capacityRows} rows if it is smaller. Call with the
	 * collection's write lock held; returns when the device holds the data.
	 * @param slots rows of the shard (not collection slots)
	 * @throws GpuOutOfMemoryException when the device has no room for the storage
	 * @throws ServiceProblem (503, busy) when no pooled stream became free within the device timeout
	 */
	void write(Shard shard, int dim, int[] slots, float[] rows, long capacityRows) {
		withStream(shard, dim, capacityRows, (stream) -> {
			if (slots.length == 0) {
				return;
			}
			int first = contiguousFrom(slots);
			if (first >= 0) {
				// A pure append (the bulk-load case) or a run of consecutive replacements: one copy
				// straight into place, no slot buffer and no scatter launch.
				shard.storage().upload(HostArray.of(rows), (long) first * dim, stream);
				return;
			}
			long total = (long) slots.length * dim;
			try (DeviceBuffer slotBuffer = this.launcher.upload(HostArray.of(slots));
					DeviceBuffer rowBuffer = this.launcher.upload(HostArray.of(rows))) {
				this.launches.scatter(stream, LaunchConfig.linear(total, KnnGeometry.LINEAR_BLOCK), total, dim,
						slotBuffer, rowBuffer, shard.storage());
			}
		});
	}

	/** The first slot when {@code slots} are consecutive, else -1. */
	static int contiguousFrom(int[] slots) {
		for (int r = 1; r < slots.length; r++) {
			if (slots[r] != slots[0] + r) {
				return -1;
			}
		}
		return (slots.length > 0) ? slots[0] : -1;
	}

	/**
	 * Copies raw rows (little-endian float32, {@code rows.remaining()} bytes) to a shard's storage
	 * from its row {@code firstRow} on, first growing it to {@code capacityRows}; for loading a
	 * snapshot chunk by chunk into storage allocated once at its final size. Write lock held.
	 */
	void writeRaw(Shard shard, int dim, long firstRow, ByteBuffer rows, long capacityRows) {
		long offset = firstRow * dim * Float.BYTES;
		withStream(shard, dim, capacityRows, (stream) -> {
			if (rows.hasRemaining()) {
				shard.storage().upload(HostArray.of(rows), offset, stream);
			}
		});
	}

	/**
	 * Copies {@code rowCount} rows of a shard from its row {@code firstRow} on into {@code dst} (from
	 * its position, which it advances), as little-endian float32; for writing a snapshot in bounded
	 * chunks with no host copy of the collection. Read lock held; returns when the bytes are in
	 * {@code dst}.
	 */
	void read(Shard shard, int dim, long firstRow, int rowCount, ByteBuffer dst) {
		long rowBytes = (long) dim * Float.BYTES;
		int bytes = (int) (rowCount * rowBytes);
		ByteBuffer target = dst.slice().limit(bytes);
		CompletableFuture<Void>[] done = new CompletableFuture[1];
		withStream(shard, dim, 0, (stream) -> done[0] = shard.storage().download(HostArray.of(target), firstRow * rowBytes, stream));
		DeviceWork.await(List.of(done[0]), this.deviceTimeout);
		dst.position(dst.position() + bytes);
	}

	/** Frees a shard's device storage (write lock held). */
	void free(Shard shard) {
		DeviceBuffer storage = shard.storage;
		shard.storage = null;
		shard.capacityRows = 0;
		if (storage != null) {
			storage.close();
		}
	}

	/** Runs {@code work} on a leased stream after growing the storage if needed, then waits for it. */
	private void withStream(Shard shard, int dim, long capacityRows, Consumer<GpuStream> work) {
		StreamLease lease;
		try {
			lease = this.pool.acquire(this.deviceTimeout);
		}
		catch (PoolExhaustedException ex) {
			throw ServiceProblem.busy(1, this.deviceTimeout, ex);
		}
		try (lease) {
			GpuStream stream = lease.stream();
			DeviceWork.runThenSynchronize(stream, () -> {
				try (StreamScope scope = this.launcher.useStream(stream)) {
					if (capacityRows > shard.capacityRows) {
						grow(shard, dim, capacityRows, stream);
					}
					work.accept(stream);
				}
			});
		}
	}

	private void grow(Shard shard, int dim, long capacityRows, GpuStream stream) {
		long usedBytes = (long) shard.rows * dim * Float.BYTES;
		DeviceBuffer grown = this.launcher.allocate(capacityRows * dim, ElementType.FLOAT);
		try {
			if (usedBytes > 0) {
				grown.copyFrom(shard.storage(), 0, 0, usedBytes, stream);
			}
		}
		catch (RuntimeException ex) {
			grown.close();
			throw ex;
		}
		DeviceBuffer old = shard.storage;
		shard.storage = grown;
		shard.capacityRows = capacityRows;
		if (old != null) {
			// Freed on its own stream once this copy and every search that used it are done.
			old.close();
		}
	}

}
