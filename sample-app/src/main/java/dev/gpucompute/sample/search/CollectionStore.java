package dev.gpucompute.sample.search;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.CollectionFiles.StoredCollection;

/**
 * The collections of the service: creating, listing, deleting, writing vectors, searching, and
 * keeping them on disk.
 *
 * <p>Every request is validated in full before a lock or a device resource is taken. Writes take
 * the collection's write lock, reserve device memory against the {@link DeviceMemoryBudget}, run
 * the device part through the {@link KnnEngine} and only then update the host mirror, so a failed
 * write changes nothing a search could see. Searches take the read lock and run concurrently.
 *
 * <p>Persistence: a write marks its collection dirty; a flusher writes dirty collections every
 * {@code flushInterval} from the host mirror (atomic replace, see {@link CollectionFiles}), and
 * {@link #close()} writes whatever is left, so a clean shutdown loses nothing and a crash loses at
 * most the last interval. Creating and deleting a collection reach the disk before they are answered.
 *
 * <p>Thread-safe. The application owns the store and closes it once, before the GPU context.
 */
public final class CollectionStore implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(CollectionStore.class);

	private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-]{1,64}");

	/** Smallest device storage a collection starts with, in rows. */
	private static final long MIN_CAPACITY_ROWS = 64;

	private final KnnEngine engine;

	private final CollectionFiles files;

	private final DeviceMemoryBudget budget;

	private final Limits limits;

	private final Duration flushInterval;

	private final ConcurrentHashMap<String, VectorCollection> collections = new ConcurrentHashMap<>();

	/** Serialises create and delete, so a name's file and map entry change together. */
	private final Object registry = new Object();

	private ScheduledExecutorService flusher;

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

	public CollectionStore(KnnEngine engine, CollectionFiles files, DeviceMemoryBudget budget, Limits limits,
			Duration flushInterval) {
		this.engine = engine;
		this.files = files;
		this.budget = budget;
		this.limits = limits;
		this.flushInterval = flushInterval;
	}

	// ---- life cycle ----------------------------------------------------------------------------

	/**
	 * Loads every collection from the data directory into device memory and starts the flusher.
	 * @return the number of collections loaded
	 */
	public int start() {
		int loaded = 0;
		for (StoredCollection stored : this.files.readAll()) {
			try {
				load(stored);
				loaded++;
			}
			catch (RuntimeException ex) {
				log.error("Could not load collection '{}' from {}: {}", stored.name(), this.files.directory(),
						ex.getMessage());
			}
		}
		log.info("Loaded {} collections from {}", loaded, this.files.directory());
		this.flusher = Executors.newSingleThreadScheduledExecutor((runnable) -> {
			Thread thread = new Thread(runnable, "collection-flusher");
			thread.setDaemon(true);
			return thread;
		});
		long period = Math.max(1, this.flushInterval.toMillis());
		this.flusher.scheduleWithFixedDelay(this::flushAll, period, period, TimeUnit.MILLISECONDS);
		return loaded;
	}

	private void load(StoredCollection stored) {
		Metric[] metrics = Metric.values();
		if (stored.metric() < 0 || stored.metric() >= metrics.length) {
			throw new IllegalStateException("unknown metric " + stored.metric());
		}
		VectorCollection collection = new VectorCollection(stored.name(), stored.dimension(), metrics[stored.metric()]);
		collection.lock.writeLock().lock();
		try {
			this.collections.put(stored.name(), collection);
			// Stored vectors are already normalised; normalising again could change their last bits.
			write(collection, stored.ids(), stored.vectors());
			collection.dirty.set(false);
		}
		catch (RuntimeException ex) {
			this.collections.remove(stored.name());
			release(collection);
			throw ex;
		}
		finally {
			collection.lock.writeLock().unlock();
		}
	}

	/** Writes every dirty collection to disk, stops the flusher and frees the device storage. Idempotent. */
	@Override
	public void close() {
		if (this.closed) {
			return;
		}
		this.closed = true;
		if (this.flusher != null) {
			this.flusher.shutdown();
			try {
				this.flusher.awaitTermination(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
		flushAll();
		for (VectorCollection collection : this.collections.values()) {
			collection.lock.writeLock().lock();
			try {
				release(collection);
			}
			finally {
				collection.lock.writeLock().unlock();
			}
		}
		this.collections.clear();
	}

	/** Writes every dirty collection now. */
	public void flushAll() {
		for (VectorCollection collection : this.collections.values()) {
			flush(collection);
		}
	}

	private void flush(VectorCollection collection) {
		collection.lock.readLock().lock();
		try {
			if (collection.closed || !collection.dirty.compareAndSet(true, false)) {
				return;
			}
			try {
				persist(collection);
			}
			catch (IOException | RuntimeException ex) {
				collection.dirty.set(true);
				log.error("Writing collection '{}' to {} failed; will retry", collection.name(),
						this.files.directory(), ex);
			}
		}
		finally {
			collection.lock.readLock().unlock();
		}
	}

	/** Writes a collection's file (its lock held). */
	private void persist(VectorCollection collection) throws IOException {
		this.files.write(collection.name(), collection.metric().ordinal(), collection.dimension(), collection.ids(),
				collection.hostVectors());
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
				persist(collection);
			}
			catch (IOException ex) {
				throw new java.io.UncheckedIOException("Could not write collection '" + name + "'", ex);
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
	 * Deletes a collection: its device memory and its file.
	 * @throws ServiceProblem 404 when there is none of that name
	 */
	public void delete(String name) {
		synchronized (this.registry) {
			VectorCollection collection = collection(name);
			collection.lock.writeLock().lock();
			try {
				if (collection.closed) {
					throw ServiceProblem.unknownCollection(name);
				}
				release(collection);
				this.collections.remove(name, collection);
				try {
					this.files.delete(name);
				}
				catch (IOException ex) {
					throw new java.io.UncheckedIOException("Could not delete the file of collection '" + name + "'", ex);
				}
			}
			finally {
				collection.lock.writeLock().unlock();
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
	 * @throws ServiceProblem 404, 400 (ids, dimension, values), 422 (memory budget)
	 */
	public Upserted upsert(String name, List<String> ids, float[] rows) {
		VectorCollection collection = collection(name);
		int dim = collection.dimension();
		checkIds(ids);
		if (rows.length != (long) ids.size() * dim) {
			if (rows.length % dim != 0) {
				throw ServiceProblem.wrongDimension(name, "vectors", dim, rows.length);
			}
			throw ServiceProblem.invalid("ids", ids.size() + " ids were given for " + (rows.length / dim) + " vectors");
		}
		Vectors.check("vectors", rows, dim, collection.metric());
		float[] prepared = rows.clone();
		if (collection.metric() == Metric.COSINE) {
			Vectors.normalize(prepared, dim);
		}
		collection.lock.writeLock().lock();
		try {
			ensureLive(collection);
			VectorCollection.Plan plan = write(collection, ids, prepared);
			return new Upserted(plan.added().size(), plan.replaced(), collection.size());
		}
		finally {
			collection.lock.writeLock().unlock();
		}
	}

	/** Writes prepared rows (write lock held): budget, device, then host. */
	private VectorCollection.Plan write(VectorCollection collection, List<String> ids, float[] rows) {
		VectorCollection.Plan plan = collection.plan(ids);
		if (plan.slots().length == 0) {
			return plan; // an empty collection loaded from disk: nothing to put on the device yet
		}
		long newSize = (long) collection.size() + plan.added().size();
		int dim = collection.dimension();
		long rowBytes = (long) dim * Float.BYTES;
		long capacity = collection.deviceRows;
		long reserved = collection.reservedBytes;
		if (newSize > capacity) {
			if (newSize * dim > Integer.MAX_VALUE - 8) {
				throw ServiceProblem.memoryBudget(collection.name(), newSize, newSize * rowBytes,
						this.budget.budgetBytes(), this.budget.reservedBytes());
			}
			long wanted = Math.max(newSize, Math.max(MIN_CAPACITY_ROWS, 2 * capacity));
			wanted = Math.min(wanted, (Integer.MAX_VALUE - 8) / dim);
			// Doubling amortises growth; when the doubled size does not fit, the exact size still may.
			if (this.budget.tryReserve(wanted * rowBytes - reserved)) {
				capacity = wanted;
			}
			else if (this.budget.tryReserve(newSize * rowBytes - reserved)) {
				capacity = newSize;
			}
			else {
				throw ServiceProblem.memoryBudget(collection.name(), newSize, newSize * rowBytes,
						this.budget.budgetBytes(), this.budget.reservedBytes());
			}
			reserved = capacity * rowBytes;
		}
		try {
			this.engine.write(collection, plan.slots(), rows, capacity);
		}
		catch (GpuOutOfMemoryException ex) {
			throw ServiceProblem.deviceFull(collection.name(), newSize, newSize * rowBytes, ex.getMessage());
		}
		finally {
			// The reservation follows what is allocated now: the storage may or may not have grown.
			long allocated = collection.deviceRows * rowBytes;
			this.budget.release(reserved - allocated);
			collection.reservedBytes = allocated;
		}
		collection.applyHost(plan.added(), plan.slots(), rows);
		collection.dirty.set(true);
		return plan;
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
			KnnEngine.TopK top = this.engine.search(collection, prepared, queryCount, k);
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

	private void checkIds(List<String> ids) {
		if (ids == null || ids.isEmpty()) {
			throw ServiceProblem.invalid("ids", "At least one id is required");
		}
		Set<String> seen = new HashSet<>(ids.size() * 2);
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
			for (int c = 0; c < id.length(); c++) {
				char ch = id.charAt(c);
				if (Character.isISOControl(ch) || ch == ',') {
					throw ServiceProblem.invalid(field, field + " contains a comma or control character");
				}
			}
			if (!seen.add(id)) {
				throw ServiceProblem.invalid(field, "id '" + id + "' occurs more than once in the request");
			}
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

	/** Frees a collection's device storage and its budget (write lock held). */
	private void release(VectorCollection collection) {
		collection.closed = true;
		this.engine.free(collection);
		this.budget.release(collection.reservedBytes);
		collection.reservedBytes = 0;
	}

	/** The memory budget, for reporting. */
	public DeviceMemoryBudget budget() {
		return this.budget;
	}

}
