package dev.gpucompute.sample;

import java.nio.file.Path;
import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.DeprecatedConfigurationProperty;
import org.springframework.util.unit.DataSize;

import dev.gpucompute.sample.storage.WriteAheadLog;

/**
 * Settings of the sample service, prefix {@code sample}. The GPU itself is configured with the
 * starter's {@code gpu.*} properties.
 */
@ConfigurationProperties("sample")
public class SampleProperties {

	/** Directory the collections are written to and loaded from at start-up. */
	private Path dataDir = Path.of("data");

	/**
	 * Device memory all collections together may occupy. Writes that would exceed it are refused
	 * with 422; searches need scratch memory beyond it (see sample.search.scratch).
	 */
	private DataSize memoryBudget = DataSize.ofMegabytes(512);

	private final Limits limits = new Limits();

	private final Search search = new Search();

	private final Storage storage = new Storage();

	private final DemoLoad demoLoad = new DemoLoad();

	public Path getDataDir() {
		return this.dataDir;
	}

	public void setDataDir(Path dataDir) {
		this.dataDir = dataDir;
	}

	public DataSize getMemoryBudget() {
		return this.memoryBudget;
	}

	public void setMemoryBudget(DataSize memoryBudget) {
		this.memoryBudget = memoryBudget;
	}

	public Limits getLimits() {
		return this.limits;
	}

	public Search getSearch() {
		return this.search;
	}

	public Storage getStorage() {
		return this.storage;
	}

	public DemoLoad getDemoLoad() {
		return this.demoLoad;
	}

	/** Input limits; requests beyond them get a 4xx problem detail. */
	public static class Limits {

		/** Largest {@code max-id-length}: any id of that many characters fits a log record. */
		public static final int MAX_ID_LENGTH = WriteAheadLog.MAX_ID_BYTES / 3;

		/** Largest request body accepted on /collections; larger ones get 413. */
		private DataSize maxBodySize = DataSize.ofMegabytes(32);

		/** Largest vector dimension of a collection. */
		private int maxDimension = 4096;

		/** Most query vectors in one search request. */
		private int maxQueries = 1024;

		/**
		 * Longest vector id, in characters; at most 21845, so that every id fits the 65535 UTF-8
		 * bytes a write-ahead log record gives it (a character takes up to 3 bytes).
		 */
		private int maxIdLength = 256;

		/** Most hits one search request may return: its number of queries times k. */
		private int maxResults = 100_000;

		public int getMaxResults() {
			return this.maxResults;
		}

		public void setMaxResults(int maxResults) {
			this.maxResults = maxResults;
		}

		public DataSize getMaxBodySize() {
			return this.maxBodySize;
		}

		public void setMaxBodySize(DataSize maxBodySize) {
			this.maxBodySize = maxBodySize;
		}

		public int getMaxDimension() {
			return this.maxDimension;
		}

		public void setMaxDimension(int maxDimension) {
			this.maxDimension = maxDimension;
		}

		public int getMaxQueries() {
			return this.maxQueries;
		}

		public void setMaxQueries(int maxQueries) {
			this.maxQueries = maxQueries;
		}

		public int getMaxIdLength() {
			return this.maxIdLength;
		}

		public void setMaxIdLength(int maxIdLength) {
			if (maxIdLength < 1 || maxIdLength > MAX_ID_LENGTH) {
				throw new IllegalArgumentException("sample.limits.max-id-length must be between 1 and " + MAX_ID_LENGTH
						+ " (an id is logged with at most " + WriteAheadLog.MAX_ID_BYTES
						+ " UTF-8 bytes, up to 3 per character), got " + maxIdLength);
			}
			this.maxIdLength = maxIdLength;
		}

	}

	/** How searches use the device. */
	public static class Search {

		/** Most stream-parallel groups (pooled streams) one batch of queries is split into. */
		private int parallelism = 4;

		/**
		 * Fewest queries worth a group of their own; smaller batches use fewer streams. Large, because
		 * a group reads every stored vector once per sub-batch however many queries it has (a tiled
		 * matrix product), and its kernels already spread over all CPU workers or GPU multiprocessors.
		 */
		private int minQueriesPerGroup = 128;

		/**
		 * Most scratch device memory one group allocates at a time (a score matrix and its candidates).
		 * A group scores as many of its queries at a time as fit against slabs of the collection, and
		 * merges the slabs' top k on the host.
		 */
		private DataSize scratch = DataSize.ofMegabytes(64);

		/**
		 * Longest wait for a write's stream before the request is answered 503, and for a search's or
		 * write's device work to finish. A search waits for its streams up to
		 * {@code gpu.streams.acquire-timeout}, the pool's own timeout, which stream-parallel groups use.
		 */
		private Duration timeout = Duration.ofSeconds(30);

		private final Batching batching = new Batching();

		public Batching getBatching() {
			return this.batching;
		}

		public int getParallelism() {
			return this.parallelism;
		}

		public void setParallelism(int parallelism) {
			this.parallelism = parallelism;
		}

		public int getMinQueriesPerGroup() {
			return this.minQueriesPerGroup;
		}

		public void setMinQueriesPerGroup(int minQueriesPerGroup) {
			this.minQueriesPerGroup = minQueriesPerGroup;
		}

		public DataSize getScratch() {
			return this.scratch;
		}

		public void setScratch(DataSize scratch) {
			this.scratch = scratch;
		}

		public Duration getTimeout() {
			return this.timeout;
		}

		public void setTimeout(Duration timeout) {
			this.timeout = timeout;
		}

		/**
		 * Small search requests joined into batches: {@code sample.search.batching.*}. The batcher's own
		 * settings are the starter's {@code gpu.batching.search.*}.
		 */
		public static class Batching {

			/**
			 * Whether search requests of at most max-request-queries queries join the 'search' batcher
			 * (configured under gpu.batching.search.*), so that concurrent small requests are answered by
			 * one search; false searches every request on its own.
			 */
			private boolean enabled = true;

			/** Most queries a request may hold to join a batch; larger requests are searched on their own. */
			private int maxRequestQueries = 8;

			public boolean isEnabled() {
				return this.enabled;
			}

			public void setEnabled(boolean enabled) {
				this.enabled = enabled;
			}

			public int getMaxRequestQueries() {
				return this.maxRequestQueries;
			}

			public void setMaxRequestQueries(int maxRequestQueries) {
				this.maxRequestQueries = maxRequestQueries;
			}

		}

	}

	/**
	 * Persistence. Every write is appended to its collection's write-ahead log
	 * ({@code <name>.wal}) and forced to disk before it is answered, so a write answered 200 survives
	 * {@code kill -9}; concurrent writers share one force (group commit). A log is folded into the
	 * collection's snapshot ({@code <name>.vec}) when it grows past {@code log-fold-size} and at a
	 * clean shutdown.
	 */
	public static class Storage {

		/**
		 * Whether each write is forced to disk before it is answered. Turn off only to measure what
		 * durability costs: an OS crash or power loss then loses writes (a killed process does not).
		 */
		private boolean sync = true;

		/** Size of a collection's write-ahead log beyond which it is folded into the collection's snapshot. */
		private DataSize logFoldSize = DataSize.ofMegabytes(64);

		/**
		 * After a storage failure: the Retry-After of a 503 answer to a refused write, and the shortest
		 * time between two attempts to fold a collection's log into its snapshot (a log that refuses
		 * writes after a failed force is retried this often in the background until it succeeds).
		 */
		private Duration retryAfter = Duration.ofSeconds(5);

		private final StorageHealth health = new StorageHealth();

		private @Nullable Duration flushInterval;

		public Duration getRetryAfter() {
			return this.retryAfter;
		}

		public void setRetryAfter(Duration retryAfter) {
			if (retryAfter == null || retryAfter.isNegative() || retryAfter.isZero()) {
				throw new IllegalArgumentException("sample.storage.retry-after must be positive, got " + retryAfter);
			}
			this.retryAfter = retryAfter;
		}

		public StorageHealth getHealth() {
			return this.health;
		}

		public boolean isSync() {
			return this.sync;
		}

		public void setSync(boolean sync) {
			this.sync = sync;
		}

		public DataSize getLogFoldSize() {
			return this.logFoldSize;
		}

		public void setLogFoldSize(DataSize logFoldSize) {
			this.logFoldSize = logFoldSize;
		}

		/**
		 * No longer used: writes are logged and synced before they are answered, and logs are
		 * folded by size ({@code sample.storage.log-fold-size}). Setting it has no effect.
		 * @return the value set, if any
		 * @deprecated since the write-ahead log; use {@code sample.storage.log-fold-size}
		 */
		@Deprecated
		@DeprecatedConfigurationProperty(replacement = "sample.storage.log-fold-size",
				reason = "Writes are logged and synced before they are answered; there is no flush interval")
		public @Nullable Duration getFlushInterval() {
			return this.flushInterval;
		}

		@Deprecated
		public void setFlushInterval(@Nullable Duration flushInterval) {
			this.flushInterval = flushInterval;
		}

	}

	/**
	 * The {@code storage} health indicator ({@code management.health.storage.enabled}, on by default):
	 * OUT_OF_SERVICE while the data directory's file system has less usable space than
	 * {@code min-free} or a collection's write-ahead log refuses writes, so that a readiness group
	 * that includes it takes the instance out of rotation.
	 */
	public static class StorageHealth {

		/**
		 * Least usable space on the data directory's file system for the indicator to say UP. Room for
		 * a log to reach {@code log-fold-size} and for a fold's new snapshot (as large as the
		 * collection) keeps writes and folds from failing.
		 */
		private DataSize minFree = DataSize.ofMegabytes(64);

		public DataSize getMinFree() {
			return this.minFree;
		}

		public void setMinFree(DataSize minFree) {
			if (minFree == null || minFree.isNegative()) {
				throw new IllegalArgumentException("sample.storage.health.min-free must not be negative, got " + minFree);
			}
			this.minFree = minFree;
		}

	}

	/** A steady mix of searches, so that dashboards and /actuator/gpu show real activity. */
	public static class DemoLoad {

		/** Whether to run the demo load (also on with the 'demo' profile). */
		private boolean enabled;

		/** Collection the demo searches; created and filled with clustered random vectors if missing or empty. */
		private String collection = "demo";

		/** Vectors the demo collection is filled with. */
		private int size = 20_000;

		/** Dimension of the demo collection. */
		private int dimension = 128;

		/** Concurrent searching threads. */
		private int clients = 2;

		/** Pause of each client between two searches. */
		private Duration interval = Duration.ofMillis(100);

		/** Largest batch of queries in one demo search (batches vary from 1 to this). */
		private int maxBatch = 16;

		/** Largest k of a demo search (k varies from 1 to this). */
		private int maxK = 20;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public String getCollection() {
			return this.collection;
		}

		public void setCollection(String collection) {
			this.collection = collection;
		}

		public int getSize() {
			return this.size;
		}

		public void setSize(int size) {
			this.size = size;
		}

		public int getDimension() {
			return this.dimension;
		}

		public void setDimension(int dimension) {
			this.dimension = dimension;
		}

		public int getClients() {
			return this.clients;
		}

		public void setClients(int clients) {
			this.clients = clients;
		}

		public Duration getInterval() {
			return this.interval;
		}

		public void setInterval(Duration interval) {
			this.interval = interval;
		}

		public int getMaxBatch() {
			return this.maxBatch;
		}

		public void setMaxBatch(int maxBatch) {
			this.maxBatch = maxBatch;
		}

		public int getMaxK() {
			return this.maxK;
		}

		public void setMaxK(int maxK) {
			this.maxK = maxK;
		}

	}

}
