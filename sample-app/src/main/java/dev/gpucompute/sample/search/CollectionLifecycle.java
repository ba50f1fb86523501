package dev.gpucompute.sample.search;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.WriteAheadLog;

/**
 * What happens between a collection's files and its device storage, for the {@link CollectionStore},
 * which keeps the registry of collections and decides when:
 * <ul>
 * <li>{@link #create}: a new collection's empty log and first snapshot, on disk before it is
 * answered;</li>
 * <li>{@link #load}, at start-up: the snapshot streamed in chunks into device storage allocated
 * once at its final size, the write-ahead log replayed through the {@link CollectionWriter}, the log
 * opened for appending (and, before any load, {@link #deleteOrphanLogs});</li>
 * <li>{@link #delete}: its files, the snapshot rewritten when only the log could not go;</li>
 * <li>{@link #release}, at close and delete: its log closed, its device storage and budget freed.</li>
 * </ul>
 *
 * <p>Keeps no state of its own; the callers hold the locks. A collection being loaded is
 * write-locked by the loading thread until it is published; {@link #create} runs under the store's
 * registry on a collection no other thread has seen; {@link #delete} and {@link #release} run with
 * the collection's commit lock and write lock held (or, for release, on a collection no other
 * thread has seen). Logs under the store's category, where operators have always found these lines.
 */
final class CollectionLifecycle {

	private static final Logger log = LoggerFactory.getLogger(CollectionStore.class);

	private final CollectionFiles files;

	private final ShardPlacement placement;

	private final LogFolder folder;

	private final CollectionWriter writer;

	private final boolean sync;

	/**
	 * @param folder writes snapshots from the device storage
	 * @param writer replays logged writes into a collection being loaded
	 * @param sync whether the logs opened force their writes ({@link CollectionStore.Durability#sync()})
	 */
	CollectionLifecycle(CollectionFiles files, ShardPlacement placement, LogFolder folder, CollectionWriter writer,
			boolean sync) {
		this.files = files;
		this.placement = placement;
		this.folder = folder;
		this.writer = writer;
		this.sync = sync;
	}

	/**
	 * Puts a new, empty collection on disk: its log, then its snapshot.
	 * @throws IOException when either fails (its log is closed again)
	 */
	void create(VectorCollection collection) throws IOException {
		try {
			// A log left by an earlier collection of this name is emptied (valid length 0) before the
			// snapshot exists: a crash in between leaves an empty orphan log, never old writes that the
			// next start would replay into the new collection.
			collection.log = this.files.openLog(collection.name(), 0, this.sync);
			this.folder.persist(collection);
		}
		catch (IOException | RuntimeException ex) {
			closeQuietly(collection.log, ex);
			throw ex;
		}
	}

	/**
	 * Deletes the write-ahead logs without a collection file: what a crash while a collection was
	 * being deleted leaves (its file goes first).
	 * @throws UncheckedIOException when one cannot be deleted
	 */
	void deleteOrphanLogs() {
		for (Path orphan : this.files.orphanLogs()) {
			log.warn("Deleting {}: a write-ahead log without its collection file, left by a crash while the "
					+ "collection was being deleted", orphan);
			try {
				Files.deleteIfExists(orphan);
			}
			catch (IOException ex) {
				throw new UncheckedIOException("Cannot delete " + orphan, ex);
			}
		}
	}

	/**
	 * Loads one collection: the snapshot streamed into storage sized for it and its log, then the log.
	 * On failure everything it took is released before the exception leaves.
	 * @param publish receives the loaded collection while its write lock is still held, so that no
	 * thread that finds it there sees it half-loaded
	 */
	void load(String name, Consumer<VectorCollection> publish) throws IOException {
		Path logFile = this.files.logOf(name);
		WriteAheadLog.Replayed pending = WriteAheadLog.replay(logFile, null);
		VectorCollection[] opened = new VectorCollection[1];
		long[] loaded = new long[1];
		try {
			this.files.load(this.files.fileOf(name), new CollectionFiles.Loader() {

				@Override
				public void begin(int metric, int dimension, int size) {
					Metric[] metrics = Metric.values();
					if (metric < 0 || metric >= metrics.length) {
						throw new IllegalStateException("unknown metric " + metric);
					}
					VectorCollection collection = new VectorCollection(name, dimension, metrics[metric]);
					opened[0] = collection;
					collection.lock.writeLock().lock();
					// The snapshot's rows exactly: the log's records may replace rather than add, so
					// replaying them grows the storage only for what they really add.
					long rows = size;
					if (rows > 0) {
						CollectionLifecycle.this.placement.reserve(collection, rows, false);
						// Allocated once at its final size: no growth copies while loading.
						for (Shard shard : collection.shards) {
							shard.engine().storage().writeRaw(shard, dimension, 0, ByteBuffer.allocate(0),
									shard.reservedBytes / ((long) dimension * Float.BYTES));
						}
					}
					loaded[0] = size;
					collection.reserveIds((int) Math.min(Integer.MAX_VALUE - 8, rows + pending.rows()));
				}

				@Override
				public void ids(String[] ids) {
					opened[0].appendIds(Arrays.asList(ids));
				}

				@Override
				public void rows(long firstRow, int rowCount, ByteBuffer chunk) {
					VectorCollection collection = opened[0];
					int dim = collection.dimension();
					long rowBytes = (long) dim * Float.BYTES;
					collection.forRange(firstRow, rowCount, (shard, localRow, rows, offset) -> {
						ByteBuffer part = chunk.duplicate();
						part.position((int) (chunk.position() + offset * rowBytes));
						part.limit((int) (part.position() + rows * rowBytes));
						shard.engine().storage().writeRaw(shard, dim, localRow, part, shard.capacityRows);
					});
				}

			});
			VectorCollection collection = opened[0];
			if (loaded[0] > 0) {
				collection.forRange(0, loaded[0], (shard, localRow, rows, offset) -> shard.rows = (int) (localRow + rows));
			}
			// Stored vectors are already normalised; normalising again could change their last bits.
			WriteAheadLog.Replayed replayed = WriteAheadLog.replay(logFile, (record) -> {
				if (record.dimension() != collection.dimension()) {
					throw new IllegalStateException("its log holds vectors of dimension " + record.dimension());
				}
				this.writer.replay(collection, Arrays.asList(record.ids()), record.rows());
			});
			collection.log = this.files.openLog(name, replayed.validLength(), this.sync);
			if (replayed.records() > 0) {
				log.info("Collection '{}': replayed {} logged writes ({} vectors)", name, replayed.records(),
						replayed.rows());
			}
			publish.accept(collection);
		}
		catch (IOException | RuntimeException ex) {
			if (opened[0] != null) {
				release(opened[0]);
			}
			throw ex;
		}
		finally {
			if (opened[0] != null && opened[0].lock.isWriteLockedByCurrentThread()) {
				opened[0].lock.writeLock().unlock();
			}
		}
	}

	/**
	 * Deletes a collection's files. When they cannot be deleted the collection stays as it was in
	 * memory, and a snapshot that went while its log stayed is written again.
	 * @throws IOException when a file could not be deleted (a failed rewrite is suppressed in it)
	 */
	void delete(VectorCollection collection) throws IOException {
		String name = collection.name();
		try {
			this.files.delete(name);
		}
		catch (IOException ex) {
			if (!Files.exists(this.files.fileOf(name))) {
				// The snapshot is gone but the log is not: the next start would delete the log as an
				// orphan, and with it the collection. Rewrite the snapshot, as a fold would.
				try {
					this.folder.persist(collection);
					collection.wal().reset();
				}
				catch (IOException | RuntimeException again) {
					ex.addSuppressed(again);
				}
			}
			throw ex;
		}
	}

	/** Frees a collection's device storage and its budget and closes its log (write lock held). */
	void release(VectorCollection collection) {
		collection.closed = true;
		if (collection.log != null) {
			try {
				if (collection.log.records() > 0) {
					// Group commit at work: how many forces the appended records needed.
					log.info("Collection '{}': {} writes logged with {} forces to disk", collection.name(),
							collection.log.records(), collection.log.forces());
				}
				collection.log.close();
			}
			catch (IOException ex) {
				log.warn("Closing the log of collection '{}' failed", collection.name(), ex);
			}
		}
		this.placement.release(collection);
	}

	/** Closes a log after a failure, keeping the failure as the one reported. */
	private static void closeQuietly(@Nullable WriteAheadLog log, Exception failure) {
		if (log != null) {
			try {
				log.close();
			}
			catch (IOException ex) {
				failure.addSuppressed(ex);
			}
		}
	}

}
