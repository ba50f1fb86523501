package dev.gpucompute.sample.search;

import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.jspecify.annotations.Nullable;
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
 * <p>The store keeps the registry of collections and the order of each request's steps; its parts
 * do the steps: {@link RequestChecks} (the input), {@link CollectionWriter} (writes),
 * {@link ShardSearches} (searches), {@link LogFolder} (folds) and {@link CollectionLifecycle} (a
 * collection's files and device storage: create, load, delete, release).
 *
 * <p>Locks of a collection, always in this order: the store's registry (create, delete), the
 * collection's commit lock (writes, folds, delete), its read-write lock.
 *
 * <p>Thread-safe. The application owns the store and closes it once, before the GPU context.
 */
public final class CollectionStore implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(CollectionStore.class);

	private final ShardPlacement placement;

	private final CollectionFiles files;

	/** Checks every request's input before a lock is taken. */
	private final RequestChecks checks;

	private final Durability durability;

	private final ConcurrentHashMap<String, VectorCollection> collections = new ConcurrentHashMap<>();

	/** Serialises create and delete, so a name's file and map entry change together. */
	private final Object registry = new Object();

	/** Folds logs into snapshots, in the background and on demand. */
	private final LogFolder folder;

	/** Commits writes: log first, then device. */
	private final CollectionWriter writer;

	/** Creates, loads, deletes and releases collections: their files and device storage. */
	private final CollectionLifecycle lifecycle;

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
		this.checks = new RequestChecks(limits);
		this.durability = durability;
		this.folder = new LogFolder(files, durability.retryAfter());
		this.writer = new CollectionWriter(this.placement, this.folder, files, durability.foldBytes());
		this.lifecycle = new CollectionLifecycle(files, this.placement, this.folder, this.writer, durability.sync());
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
		this.lifecycle.deleteOrphanLogs();
		int loaded = 0;
		for (String name : this.files.names()) {
			try {
				this.lifecycle.load(name, (collection) -> this.collections.put(name, collection));
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
					this.lifecycle.release(collection);
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
		this.checks.checkCreate(name, dimension);
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
				this.lifecycle.create(collection);
			}
			catch (IOException ex) {
				throw ServiceProblem.storage(name, "Collection '" + name + "' was not created",
						StorageFailure.of(ex, this.files.directory(), CollectionFiles.snapshotBytesAtLeast(0, dimension)),
						this.durability.retryAfter());
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
					this.lifecycle.delete(collection);
				}
				catch (IOException ex) {
					throw ServiceProblem.storage(name, "Could not delete the files of collection '" + name
							+ "', so it was kept", StorageFailure.of(ex, this.files.directory(), 0),
							this.durability.retryAfter());
				}
				this.lifecycle.release(collection);
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
		this.checks.checkWrite(name, dim, collection.metric(), ids, rows);
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
		int queryCount = this.checks.checkQueries(name, dim, collection.metric(), queries);
		float[] prepared = queries;
		if (collection.metric() == Metric.COSINE) {
			prepared = queries.clone();
			Vectors.normalize(prepared, dim);
		}
		collection.lock.readLock().lock();
		try {
			ensureLive(collection);
			this.checks.checkResults(name, queryCount, k, collection.size());
			TopK top = this.shardSearches.search(collection, prepared, queryCount, k);
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

	private static @Nullable CollectionInfo infoOrNull(VectorCollection collection) {
		collection.lock.readLock().lock();
		try {
			return collection.closed ? null : collection.info();
		}
		finally {
			collection.lock.readLock().unlock();
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
			long refusedWrites, @Nullable String lastRefusal, java.time.@Nullable Instant lastRefusalAt) {
	}

	/** The devices collections are placed on, each with its budget. */
	public List<SearchDevice> devices() {
		return this.placement.devices();
	}

}
