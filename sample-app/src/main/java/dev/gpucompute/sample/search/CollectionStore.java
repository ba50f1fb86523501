package dev.gpucompute.sample.search;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.StorageFailure;
import dev.gpucompute.sample.storage.WriteAheadLog;

/**
 * The collections of the service: creating, listing, deleting, writing vectors, searching, and
 * keeping them on disk.
 *
 * <p>Every request is validated in full before a lock or a device resource is taken. Writes go
 * through the {@link CollectionWriter}: room first (device memory reserved against the devices'
 * {@link DeviceMemoryBudget}s by {@link ShardPlacement}: a new collection goes to the device with the
 * most free budget, one that outgrows its device continues on another), then the write-ahead log,
 * forced to disk with group commit, and only then the device and the ids, so a write that fails at
 * any step changes nothing a search or count could see. Searches take the read lock and run
 * concurrently, also while writes are forced; a collection spread over several devices is searched
 * on all of them at once and the results merged exactly.
 *
 * <p>Durability: a write answered is in the collection's {@link WriteAheadLog} on disk, so it
 * survives {@code kill -9}; a write refused by the storage (507, 503) was not stored at all. The
 * {@link LogFolder} folds a log past {@link Durability#foldBytes()} into the collection's snapshot
 * ({@link CollectionFiles}: written from the device storage in bounded chunks, forced, renamed
 * atomically) and empties it; {@link #close()} folds every log, and a fold that fails keeps the log
 * and the old snapshot. Start-up loads each snapshot in chunks into device storage allocated once at
 * its final size and replays the log; a collection that cannot be loaded fails start-up with a
 * message naming it, its file and the remedy. Creating and deleting a collection reach the disk
 * before they are answered.
 *
 * <p>Locks of a collection, always in this order: the store's registry (create, delete), the
 * collection's commit lock (writes, folds, delete), its read-write lock.
 *
 * <p>Thread-safe. The application owns the store and closes it once, before the GPU context.
 */
public final class CollectionStore implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(CollectionStore.class);

	private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");

	private final ShardPlacement placement;

	private final CollectionFiles files;

	private final Limits limits;

	private final Durability durability;

	private final ConcurrentHashMap<String, VectorCollection> collections = new ConcurrentHashMap<>();

	/** Serialises create and delete, so a name's file and map entry change together. */
	private final Object registry = new Object();

	/** Folds logs into snapshots, in the background and on demand. */
	private final LogFolder folder;

	/** Commits writes: log first, then device. */
	private final CollectionWriter writer;

	/** Searches the shards of a collection, in parallel when there are several. */
	private final ShardSearches shardSearches = new ShardSearches();

	private volatile boolean closed;

	/**
	 * Input limits.
	 *
	 * @param maxDimension largest dimension of a collection
	 * @param maxQueries most queries in one search request
	 * @param maxIdLength longest id, in characters
	 * @param maxResults most hits one search may return (queries times k)
	 */
	public record Limits(int maxDimension, int maxQueries, int maxIdLength, int maxResults) {
	}

	/**
	 * How writes reach the disk.
	 *
	 * @param sync whether a write is forced to disk before it is answered; false only to measure
	 * what durability costs (a crash then loses what the OS had not written)
	 * @param foldBytes log size beyond which it is folded into the collection's snapshot
	 * @param retryAfter after a storage failure: the shortest time between two attempts to fold a
	 * log (a broken log is retried this often in the background), and the {@code Retry-After} of a
	 * 503 answer
	 */
	public record Durability(boolean sync, long foldBytes, Duration retryAfter) {

		/** Synced writes, logs folded past 64 MB, storage failures retried after 5 s. */
		public static final Durability DEFAULT = new Durability(true, 64L << 20);

		/** Retrying after storage failures every 5 s. */
		public Durability(boolean sync, long foldBytes) {
			this(sync, foldBytes, Duration.ofSeconds(5));
		}

		public Durability {
			if (retryAfter.isNegative() || retryAfter.isZero()) {
				throw new IllegalArgumentException("retryAfter must be positive, got " + retryAfter);
			}
		}

	}

	/** A store on one device (ordinal 0). */
	public CollectionStore(KnnEngine engine, CollectionFiles files, DeviceMemoryBudget budget, Limits limits,
			Durability durability) {
		this(List.of(new SearchDevice(0, engine, budget)), files, limits, durability);
	}

	/**
	 * A store over several devices: each new collection goes to the one with the most free budget,
	 * and a collection that outgrows its device continues on another ({@link ShardPlacement}).
	 */
	public CollectionStore(List<SearchDevice> devices, CollectionFiles files, Limits limits, Durability durability) {
		if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
			// Snapshots and logs are little-endian and go to and from device memory byte for byte.
			throw new IllegalStateException("The sample service needs a little-endian host");
		}
		this.placement = new ShardPlacement(devices);
		this.files = files;
		this.limits = limits;
		this.durability = durability;
		this.folder = new LogFolder(files, durability.retryAfter());
		this.writer = new CollectionWriter(this.placement, this.folder, files, durability.foldBytes());
	}

	// ---- life cycle ----------------------------------------------------------------------------

	/**
	 * Loads every collection from the data directory into device memory: its snapshot, then its log.
	 * @return the number of collections loaded
	 * @throws IllegalStateException naming the collection, its file, the cause and the remedy when
	 * one cannot be loaded (everything loaded so far is released first): a service that started
	 * without it would answer 404 for data it holds on disk
	 */
	public int start() {
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
		int loaded = 0;
		for (String name : this.files.names()) {
			try {
				open(name);
				loaded++;
			}
			catch (IOException | RuntimeException ex) {
				String message = "Collection '" + name + "' cannot be loaded from " + this.files.fileOf(name)
						+ " (and its log " + this.files.logOf(name) + "): " + describe(ex) + ". The service does not "
						+ "start without it. Remedy: if it does not fit, raise sample.memory-budget (and the device's "
						+ "or process's memory); if the file is damaged, restore it from a backup or move both files "
						+ "out of " + this.files.directory() + " (the collection is then gone) and start again.";
				close();
				throw new IllegalStateException(message, ex);
			}
		}
		log.info("Loaded {} collections from {}", loaded, this.files.directory());
		return loaded;
	}

	private static String describe(Throwable ex) {
		String message = (ex instanceof ServiceProblem problem) ? problem.detail() : ex.getMessage();
		return ex.getClass().getSimpleName() + ((message != null) ? ": " + message : "");
	}

	/** Loads one collection: the snapshot streamed into storage sized for it and its log, then the log. */
	private void open(String name) throws IOException {
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
						CollectionStore.this.placement.reserve(collection, rows, false);
						// Allocated once at its final size: no growth copies while loading.
						for (Shard shard : collection.shards) {
							shard.engine().writeRaw(shard, dimension, 0, ByteBuffer.allocate(0),
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
						shard.engine().writeRaw(shard, dim, localRow, part, shard.capacityRows);
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
			collection.log = this.files.openLog(name, replayed.validLength(), this.durability.sync());
			if (replayed.records() > 0) {
				log.info("Collection '{}': replayed {} logged writes ({} vectors)", name, replayed.records(),
						replayed.rows());
			}
			this.collections.put(name, collection);
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
	 * Folds every log into its snapshot, closes the logs and frees the device storage. Idempotent. A
	 * fold that fails (a full disk) keeps the log and the old snapshot, so the next start replays
	 * every acknowledged write.
	 */
	@Override
	public void close() {
		if (this.closed) {
			return;
		}
		this.closed = true;
		this.folder.close();
		this.shardSearches.close();
		for (VectorCollection collection : this.collections.values()) {
			collection.commitLock.lock();
			try {
				this.folder.fold(collection);
				collection.lock.writeLock().lock();
				try {
					release(collection);
				}
				finally {
					collection.lock.writeLock().unlock();
				}
			}
			finally {
				collection.commitLock.unlock();
			}
		}
		this.collections.clear();
	}

	/**
	 * Folds every collection's log into its snapshot now; a log whose fold fails (a full disk) is
	 * kept, with the old snapshot, and logged.
	 */
	public void flushAll() {
		for (VectorCollection collection : this.collections.values()) {
			this.folder.fold(collection);
		}
	}

	// ---- collections ---------------------------------------------------------------------------

	/** The outcome of {@link #create}: whether it was created now, and the collection. */
	public record Created(boolean created, CollectionInfo info) {
	}

	/**
	 * Creates a collection, or confirms one of the same shape.
	 * @throws ServiceProblem 400 for a bad name or dimension, 409 when it exists with another shape
	 */
	public Created create(String name, Integer dimension, Metric metric) {
		if (name == null || !NAME.matcher(name).matches()) {
			throw ServiceProblem.invalid("name",
					"A collection name is 1 to 64 letters, digits, '_' or '-', got '" + name + "'");
		}
		if (dimension == null) {
			throw ServiceProblem.invalid("dimension", "dimension is required");
		}
		if (dimension < 1 || dimension > this.limits.maxDimension()) {
			throw ServiceProblem.invalid("dimension", "dimension must be between 1 and " + this.limits.maxDimension()
					+ " (sample.limits.max-dimension), got " + dimension);
		}
		ensureOpen();
		synchronized (this.registry) {
			VectorCollection existing = this.collections.get(name);
			if (existing != null) {
				CollectionInfo info = info(existing);
				if (existing.dimension() != dimension || existing.metric() != metric) {
					throw ServiceProblem.collectionConflict(name, info, dimension, metric);
				}
				return new Created(false, info);
			}
			VectorCollection collection = new VectorCollection(name, dimension, metric);
			try {
				// A log left by an earlier collection of this name is emptied (valid length 0) before the
				// snapshot exists: a crash in between leaves an empty orphan log, never old writes that the
				// next start would replay into the new collection.
				collection.log = this.files.openLog(name, 0, this.durability.sync());
				this.folder.persist(collection);
			}
			catch (IOException | RuntimeException ex) {
				closeQuietly(collection.log, ex);
				if (ex instanceof IOException io) {
					throw ServiceProblem.storage(name, "Collection '" + name + "' was not created",
							StorageFailure.of(io, this.files.directory(),
									CollectionFiles.snapshotBytesAtLeast(0, dimension)),
							this.durability.retryAfter());
				}
				throw (RuntimeException) ex;
			}
			this.collections.put(name, collection);
			return new Created(true, collection.info());
		}
	}

	/** All collections, by name. */
	public List<CollectionInfo> list() {
		List<CollectionInfo> infos = new ArrayList<>();
		for (VectorCollection collection : this.collections.values()) {
			Optional.ofNullable(infoOrNull(collection)).ifPresent(infos::add);
		}
		infos.sort(Comparator.comparing(CollectionInfo::name));
		return infos;
	}

	/**
	 * One collection.
	 * @throws ServiceProblem 404 when there is none of that name
	 */
	public CollectionInfo get(String name) {
		CollectionInfo info = infoOrNull(collection(name));
		if (info == null) {
			throw ServiceProblem.unknownCollection(name);
		}
		return info;
	}

	/**
	 * Deletes a collection: its files, then its device memory. When the files cannot be deleted the
	 * collection stays as it was in memory (a fold rewrites its snapshot if that was deleted), so a
	 * failed delete can be retried.
	 * @throws ServiceProblem 404 when there is none of that name
	 */
	public void delete(String name) {
		synchronized (this.registry) {
			VectorCollection collection = collection(name);
			// After any write being committed: its log and storage go away with the collection.
			collection.commitLock.lock();
			collection.lock.writeLock().lock();
			try {
				if (collection.closed) {
					throw ServiceProblem.unknownCollection(name);
				}
				try {
					this.files.delete(name);
				}
				catch (IOException ex) {
					if (!Files.exists(this.files.fileOf(name))) {
						// The snapshot is gone but the log is not: the next start would delete the log as an
						// orphan, and with it the collection. Rewrite the snapshot, as a fold would.
						try {
							this.folder.persist(collection);
							collection.log.reset();
						}
						catch (IOException | RuntimeException again) {
							ex.addSuppressed(again);
						}
					}
					throw ServiceProblem.storage(name, "Could not delete the files of collection '" + name
							+ "', so it was kept", StorageFailure.of(ex, this.files.directory(), 0),
							this.durability.retryAfter());
				}
				release(collection);
				this.collections.remove(name, collection);
			}
			finally {
				collection.lock.writeLock().unlock();
				collection.commitLock.unlock();
			}
		}
	}

	// ---- vectors -------------------------------------------------------------------------------

	/** The outcome of a write. */
	public record Upserted(int added, int replaced, int size) {
	}

	/**
	 * Adds or replaces vectors.
	 * @param ids one id per row, unique within the request
	 * @param rows {@code ids.size()} rows, row-major, of the collection's dimension
	 * @throws ServiceProblem 404, 400 (ids, dimension, values), 422 (memory budget), 503 (busy, or
	 * storage unavailable: nothing stored, retry after the {@code Retry-After}), 507 (no space on the
	 * data directory's file system: nothing stored)
	 */
	public Upserted upsert(String name, List<String> ids, float[] rows) {
		return upsert(name, ids, rows, false);
	}

	/**
	 * {@link #upsert}, taking ownership of {@code rows}: they may be normalised in place (cosine), so
	 * the caller must not use the array afterwards. Saves a copy of every request on the ingest path.
	 */
	public Upserted upsertOwned(String name, List<String> ids, float[] rows) {
		return upsert(name, ids, rows, true);
	}

	private Upserted upsert(String name, List<String> ids, float[] rows, boolean owned) {
		VectorCollection collection = collection(name);
		int dim = collection.dimension();
		checkIds(ids, dim);
		if (rows.length != (long) ids.size() * dim) {
			if (rows.length % dim != 0) {
				throw ServiceProblem.wrongDimension(name, "vectors", dim, rows.length);
			}
			throw ServiceProblem.invalid("ids", ids.size() + " ids were given for " + (rows.length / dim) + " vectors");
		}
		Vectors.check("vectors", rows, dim, collection.metric());
		float[] prepared = rows;
		if (collection.metric() == Metric.COSINE) {
			prepared = owned ? rows : rows.clone(); // else the caller's array stays as it was
			Vectors.normalize(prepared, dim);
		}
		return this.writer.upsert(collection, ids, prepared);
	}

	/**
	 * The {@code k} nearest vectors of each query, best first.
	 * @param queries {@code queryCount} rows of the collection's dimension, row-major
	 * @throws ServiceProblem 404, 400 (dimension, values, k, too many queries or results)
	 */
	public List<List<Hit>> search(String name, float[] queries, int k) {
		VectorCollection collection = collection(name);
		int dim = collection.dimension();
		if (queries.length % dim != 0) {
			throw ServiceProblem.wrongDimension(name, "vectors", dim, queries.length);
		}
		int queryCount = queries.length / dim;
		if (queryCount < 1) {
			throw ServiceProblem.invalid("vectors", "At least one query vector is required");
		}
		if (queryCount > this.limits.maxQueries()) {
			throw ServiceProblem.invalid("vectors", queryCount + " queries exceed the limit of "
					+ this.limits.maxQueries() + " per request (sample.limits.max-queries)");
		}
		Vectors.check("vectors", queries, dim, collection.metric());
		float[] prepared = queries;
		if (collection.metric() == Metric.COSINE) {
			prepared = queries.clone();
			Vectors.normalize(prepared, dim);
		}
		collection.lock.readLock().lock();
		try {
			ensureLive(collection);
			int size = collection.size();
			if (k < 1 || k > size) {
				throw ServiceProblem.kOutOfRange(name, k, size);
			}
			if ((long) queryCount * k > this.limits.maxResults()) {
				throw ServiceProblem.tooManyResults(queryCount, k, this.limits.maxResults());
			}
			KnnEngine.TopK top = this.shardSearches.search(collection, prepared, queryCount, k);
			List<List<Hit>> results = new ArrayList<>(queryCount);
			for (int q = 0; q < queryCount; q++) {
				List<Hit> hits = new ArrayList<>(k);
				for (int r = 0; r < k; r++) {
					int i = q * k + r;
					hits.add(new Hit(collection.idAt(top.slots()[i]), top.scores()[i]));
				}
				results.add(hits);
			}
			return results;
		}
		finally {
			collection.lock.readLock().unlock();
		}
	}

	// ---- helpers -------------------------------------------------------------------------------

	/**
	 * Checks a write's ids, and that the write fits one log record (ids of at most
	 * {@value WriteAheadLog#MAX_ID_BYTES} UTF-8 bytes, a record under 2 GiB), so that a write the
	 * log cannot hold is refused as a bad request (400) before anything is reserved.
	 */
	private void checkIds(List<String> ids, int dimension) {
		if (ids == null || ids.isEmpty()) {
			throw ServiceProblem.invalid("ids", "At least one id is required");
		}
		Set<String> seen = new HashSet<>(ids.size() * 2);
		long idBytes = 0;
		for (int i = 0; i < ids.size(); i++) {
			String id = ids.get(i);
			String field = "ids[" + i + "]";
			if (id == null || id.isEmpty()) {
				throw ServiceProblem.invalid(field, field + " is empty");
			}
			if (id.length() > this.limits.maxIdLength()) {
				throw ServiceProblem.invalid(field, field + " is longer than " + this.limits.maxIdLength()
						+ " characters (sample.limits.max-id-length)");
			}
			int utf8 = 0;
			for (int c = 0; c < id.length(); c++) {
				char ch = id.charAt(c);
				if (Character.isISOControl(ch) || ch == ',') {
					throw ServiceProblem.invalid(field, field + " contains a comma or control character");
				}
				// UTF-8 length: a surrogate counts 2 (a pair is 4 bytes, a lone one is replaced by '?').
				utf8 += (ch < 0x80) ? 1 : (ch < 0x800 || Character.isSurrogate(ch)) ? 2 : 3;
			}
			if (utf8 > WriteAheadLog.MAX_ID_BYTES) {
				throw ServiceProblem.invalid(field, field + " is " + utf8 + " bytes long in UTF-8, more than the "
						+ WriteAheadLog.MAX_ID_BYTES + " an id may have");
			}
			idBytes += utf8;
			if (!seen.add(id)) {
				throw ServiceProblem.invalid(field, "id '" + id + "' occurs more than once in the request");
			}
		}
		long record = WriteAheadLog.payloadBytes(ids.size(), dimension, idBytes);
		if (record > WriteAheadLog.MAX_PAYLOAD) {
			throw ServiceProblem.invalid("ids", "A write of " + ids.size() + " vectors of dimension " + dimension
					+ " with these ids needs a log record of " + record + " bytes, more than the "
					+ WriteAheadLog.MAX_PAYLOAD + " one write may have; split it into smaller writes");
		}
	}

	private VectorCollection collection(String name) {
		VectorCollection collection = (name != null) ? this.collections.get(name) : null;
		if (collection == null) {
			throw ServiceProblem.unknownCollection(name);
		}
		return collection;
	}

	private void ensureLive(VectorCollection collection) {
		if (collection.closed) {
			throw ServiceProblem.unknownCollection(collection.name());
		}
	}

	private void ensureOpen() {
		if (this.closed) {
			throw new IllegalStateException("The collection store is closed");
		}
	}

	private static CollectionInfo info(VectorCollection collection) {
		CollectionInfo info = infoOrNull(collection);
		if (info == null) {
			throw ServiceProblem.unknownCollection(collection.name());
		}
		return info;
	}

	private static CollectionInfo infoOrNull(VectorCollection collection) {
		collection.lock.readLock().lock();
		try {
			return collection.closed ? null : collection.info();
		}
		finally {
			collection.lock.readLock().unlock();
		}
	}

	/** Frees a collection's device storage and its budget and closes its log (write lock held). */
	private void release(VectorCollection collection) {
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
	private static void closeQuietly(WriteAheadLog log, Exception failure) {
		if (log != null) {
			try {
				log.close();
			}
			catch (IOException ex) {
				failure.addSuppressed(ex);
			}
		}
	}

	/**
	 * What the storage of the collections needs an operator to know: logs that refuse writes until
	 * a fold succeeds, folds that failed, and writes the storage refused (for the health indicator).
	 */
	public StorageStatus storageStatus() {
		Map<String, String> brokenLogs = new java.util.TreeMap<>();
		Map<String, String> failedFolds = new java.util.TreeMap<>();
		for (VectorCollection collection : this.collections.values()) {
			WriteAheadLog wal = collection.log;
			if (wal != null && wal.broken() && !collection.closed) {
				IOException failure = wal.failure();
				brokenLogs.put(collection.name(), (failure != null)
						? StorageFailure.of(failure, this.files.directory(), 0).reason() : "unknown");
			}
			StorageFailure fold = collection.foldFailure;
			if (fold != null && !collection.closed) {
				failedFolds.put(collection.name(), fold.reason());
			}
		}
		return new StorageStatus(this.files.directory(), brokenLogs, failedFolds, this.writer.refusedWrites(),
				this.writer.lastRefusal(), this.writer.lastRefusalAt());
	}

	/**
	 * The state of the collections' storage.
	 *
	 * @param directory the data directory
	 * @param brokenLogs collections whose write-ahead log refuses writes until a fold succeeds (retried
	 * in the background), with the reason
	 * @param failedFolds collections whose last fold failed (their log keeps growing), with the reason
	 * @param refusedWrites writes the storage refused since start-up (nothing of them was stored)
	 * @param lastRefusal the last of them ("collection 'c': reason"), or {@code null}
	 * @param lastRefusalAt when it happened, or {@code null}
	 */
	public record StorageStatus(Path directory, Map<String, String> brokenLogs, Map<String, String> failedFolds,
			long refusedWrites, String lastRefusal, java.time.Instant lastRefusalAt) {
	}

	/** The devices collections are placed on, each with its budget. */
	public List<SearchDevice> devices() {
		return this.placement.devices();
	}

}
