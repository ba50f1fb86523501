package dev.gpucompute.sample.search;

import java.io.IOException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.StorageFailure;
import dev.gpucompute.sample.storage.WriteAheadLog;

/**
 * Folds collections' write-ahead logs into their snapshots: written from the device storage in
 * bounded chunks ({@link CollectionFiles}: a temporary file, forced, renamed atomically over the old
 * snapshot), then the log is emptied. A fold holds the collection's commit lock and read lock:
 * searches go on, writes wait, so the snapshot and the log agree.
 *
 * <p>A fold that fails changes nothing: the old snapshot stays whole (the temporary file is
 * deleted) and the log keeps every acknowledged write, so a restart replays them. That is also what
 * happens at shutdown on a full disk. A fold is not even tried when the file system has less room
 * than the snapshot needs, and after a failure not again within {@code retryAfter}, so that a full
 * disk is not rewritten to the brim on every write.
 *
 * <p>A broken log (a failed force, or a failed append that could not be cut off; see
 * {@link WriteAheadLog#broken}) takes appends again only after a fold. The folder retries such a
 * fold in the background every {@code retryAfter} until it succeeds, and the next write tries it
 * too ({@link #usable}), so writes resume by themselves once the disk has room again, with no
 * restart and without waiting for a write (a readiness probe that took the instance out of
 * rotation gets it back).
 *
 * <p>Thread-safe. Owned and closed by the {@link CollectionStore}.
 */
final class LogFolder implements AutoCloseable {

	private static final Logger log = LoggerFactory.getLogger(LogFolder.class);

	private final CollectionFiles files;

	private final Duration retryAfter;

	/** Background folds, one at a time; delayed retries are dropped at shutdown (the store folds once more). */
	private final ScheduledThreadPoolExecutor executor;

	/** Collections with a background fold queued. */
	private final Set<VectorCollection> scheduled = ConcurrentHashMap.newKeySet();

	LogFolder(CollectionFiles files, Duration retryAfter) {
		this.files = files;
		this.retryAfter = retryAfter;
		this.executor = new ScheduledThreadPoolExecutor(1, (runnable) -> {
			Thread thread = new Thread(runnable, "collection-log-folder");
			thread.setDaemon(true);
			return thread;
		});
		this.executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
		this.executor.setRemoveOnCancelPolicy(true);
	}

	/** How long after a failed fold the next is tried, and what a 503 tells clients to wait. */
	Duration retryAfter() {
		return this.retryAfter;
	}

	/**
	 * Folds the collection's log into its snapshot now, unless it is empty and usable. Takes the
	 * commit lock, then the read lock.
	 * @return {@code null} when the log is empty and usable afterwards, else why not (the log and the
	 * old snapshot are then unchanged)
	 */
	@Nullable StorageFailure fold(VectorCollection collection) {
		collection.commitLock.lock();
		try {
			collection.lock.readLock().lock();
			try {
				WriteAheadLog wal = collection.log;
				if (collection.closed || wal == null || (wal.size() == 0 && !wal.broken())) {
					return null;
				}
				long needed = CollectionFiles.snapshotBytesAtLeast(collection.size(), collection.dimension());
				long usable = this.files.usableSpace();
				if (usable >= 0 && usable < needed) {
					return failed(collection, StorageFailure.noRoom(this.files.directory(), needed, usable));
				}
				try {
					persist(collection);
					wal.reset();
				}
				catch (IOException ex) {
					return failed(collection, StorageFailure.of(ex, this.files.directory(), needed));
				}
				catch (RuntimeException ex) {
					// Reading the device failed (no stream in time, a lost device): not the disk's fault.
					return failed(collection,
							StorageFailure.of(new IOException("reading the collection from the device failed: " + ex, ex),
									this.files.directory(), 0));
				}
				if (collection.foldFailure != null) {
					log.info("Collection '{}': folded its write-ahead log into {} after earlier failures; it takes writes "
							+ "as usual", collection.name(), this.files.fileOf(collection.name()));
					collection.foldFailure = null;
				}
				return null;
			}
			finally {
				collection.lock.readLock().unlock();
			}
		}
		finally {
			collection.commitLock.unlock();
		}
	}

	/** Writes a collection's snapshot from its device storage, in bounded chunks (its lock held). */
	void persist(VectorCollection collection) throws IOException {
		int dim = collection.dimension();
		this.files.write(collection.name(), collection.metric().ordinal(), dim, collection.idArray(), collection.size(),
				(first, count, dst) -> collection.forRange(first, count,
						(shard, localRow, rows, offset) -> shard.engine().storage().read(shard, dim, localRow, rows, dst)));
	}

	private StorageFailure failed(VectorCollection collection, StorageFailure failure) {
		boolean first = collection.foldFailure == null;
		collection.foldFailure = failure;
		collection.foldFailedAt = System.nanoTime();
		String broken = collection.wal().broken() ? "; the log refuses writes until a fold succeeds, retried every "
				+ this.retryAfter.toMillis() + " ms" : "";
		if (first) {
			// The log still holds every acknowledged write and the old snapshot is whole: nothing is lost.
			log.error("Folding the log of collection '{}' into {} failed ({}); the log and the old snapshot are kept{}",
					collection.name(), this.files.fileOf(collection.name()), failure.reason(), broken, failure.cause());
		}
		else {
			log.debug("Folding the log of collection '{}' failed again: {}", collection.name(), failure.reason());
		}
		return failure;
	}

	/**
	 * Whether the collection's log takes appends (commit lock held). A broken log is folded first,
	 * unless a fold failed within {@code retryAfter}.
	 * @return {@code null} when it does, else why not
	 */
	@Nullable StorageFailure usable(VectorCollection collection) {
		if (!collection.wal().broken()) {
			return null;
		}
		StorageFailure last = collection.foldFailure;
		if (last != null && failedRecently(collection)) {
			return last;
		}
		return fold(collection);
	}

	/** Folds soon in the background, unless a fold of this collection failed within {@code retryAfter}. */
	void foldSoon(VectorCollection collection) {
		if (collection.foldFailure == null || !failedRecently(collection)) {
			schedule(collection, 0);
		}
	}

	/**
	 * Folds in the background as soon as possible, and for a broken log again every
	 * {@code retryAfter} until it takes writes again.
	 */
	void recover(VectorCollection collection) {
		schedule(collection, 0);
	}

	private boolean failedRecently(VectorCollection collection) {
		return System.nanoTime() - collection.foldFailedAt < this.retryAfter.toNanos();
	}

	private void schedule(VectorCollection collection, long delayNanos) {
		if (!this.scheduled.add(collection)) {
			return;
		}
		try {
			this.executor.schedule(() -> {
				this.scheduled.remove(collection);
				StorageFailure failure = fold(collection);
				WriteAheadLog wal = collection.log;
				if (failure != null && !collection.closed && wal != null && wal.broken()) {
					schedule(collection, this.retryAfter.toNanos());
				}
			}, delayNanos, TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException ex) {
			this.scheduled.remove(collection); // closing: the store folds every collection once more
		}
	}

	/** Stops background folds: waits for a running one, drops those waiting. Idempotent. */
	@Override
	public void close() {
		this.executor.shutdown();
		try {
			this.executor.awaitTermination(5, TimeUnit.MINUTES);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
