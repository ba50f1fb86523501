package dev.gpucompute.sample.search;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.WriteAheadLog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A collection's way between its files and its device storage, without a store: created on disk,
 * released, loaded back (snapshot and log) by a lifecycle over fresh budgets as at a restart, and a
 * load that fails handing back everything it took. On the CPU backend, with the store's own
 * collaborators (placement, folder, writer) and no registry.
 */
class CollectionLifecycleTests {

	@TempDir
	Path dir;

	private GpuContext context;

	private KnnEngine engine;

	private final List<LogFolder> folders = new ArrayList<>();

	@BeforeEach
	void open() {
		this.context = GpuContext.builder().backend(Backend.CPU).poolSize(2).maxSize(8).cpuThreads(1).open();
		this.engine = StoreFixture.engine(this.context, 1, 2, 1L << 20, Duration.ofSeconds(60));
	}

	@AfterEach
	void close() {
		this.folders.forEach(LogFolder::close);
		this.context.close();
	}

	/** The lifecycle and the writer of one store over one device with {@code budget}. */
	private record Parts(CollectionLifecycle lifecycle, CollectionWriter writer, LogFolder folder) {
	}

	private Parts parts(CollectionFiles files, DeviceMemoryBudget budget) {
		ShardPlacement placement = new ShardPlacement(List.of(new SearchDevice(0, this.engine, budget)));
		LogFolder folder = new LogFolder(files, Duration.ofSeconds(5));
		this.folders.add(folder);
		CollectionWriter writer = new CollectionWriter(placement, folder, files, Long.MAX_VALUE);
		return new Parts(new CollectionLifecycle(files, placement, folder, writer, true), writer, folder);
	}

	private static void release(CollectionLifecycle lifecycle, VectorCollection collection) {
		collection.lock.writeLock().lock();
		try {
			lifecycle.release(collection);
		}
		finally {
			collection.lock.writeLock().unlock();
		}
	}

	@Test
	void aCreatedCollectionLoadsBackWithItsLoggedWritesPublishedWhileStillWriteLocked() throws IOException {
		CollectionFiles files = new CollectionFiles(this.dir);
		DeviceMemoryBudget before = new DeviceMemoryBudget(1L << 20);
		Parts first = parts(files, before);
		VectorCollection created = new VectorCollection("c", 2, Metric.DOT);
		first.lifecycle().create(created);
		assertThat(files.fileOf("c")).exists();
		assertThat(files.logOf("c")).exists();
		first.writer().upsert(created, List.of("a", "b"), new float[] { 1, 2, 3, 4 });
		assertThat(before.reservedBytes()).isPositive();
		release(first.lifecycle(), created);
		assertThat(created.closed).isTrue();
		assertThat(before.reservedBytes()).as("released with the collection").isZero();

		DeviceMemoryBudget after = new DeviceMemoryBudget(1L << 20);
		Parts restart = parts(files, after);
		List<VectorCollection> published = new ArrayList<>();
		List<Boolean> lockedWhenPublished = new ArrayList<>();
		restart.lifecycle().load("c", (collection) -> {
			published.add(collection);
			lockedWhenPublished.add(collection.lock.isWriteLockedByCurrentThread());
		});

		assertThat(published).hasSize(1);
		assertThat(lockedWhenPublished).containsExactly(true);
		VectorCollection loaded = published.get(0);
		assertThat(loaded.lock.isWriteLocked()).as("unlocked once loaded").isFalse();
		assertThat(loaded.size()).as("both writes replayed from the log").isEqualTo(2);
		assertThat(loaded.slotOf("b")).isEqualTo(1);
		assertThat(after.reservedBytes()).isPositive();
		release(restart.lifecycle(), loaded);
		assertThat(after.reservedBytes()).isZero();
	}

	@Test
	void aLoadThatFailsReleasesWhatItTookAndPublishesNothing() throws IOException {
		CollectionFiles files = new CollectionFiles(this.dir);
		Parts first = parts(files, new DeviceMemoryBudget(1L << 20));
		VectorCollection created = new VectorCollection("c", 2, Metric.DOT);
		first.lifecycle().create(created);
		first.writer().upsert(created, List.of("a", "b"), new float[] { 1, 2, 3, 4 });
		assertThat(first.folder().fold(created)).as("the rows go into the snapshot").isNull();
		release(first.lifecycle(), created);
		// A record of another dimension after the snapshot: the load reserves for the snapshot, then fails.
		Path logFile = files.logOf("c");
		try (WriteAheadLog log = new WriteAheadLog(logFile, Files.size(logFile), true)) {
			log.sync(log.appendUpsert(new String[] { "x" }, 1, 3, new float[] { 1, 2, 3 }));
		}

		DeviceMemoryBudget budget = new DeviceMemoryBudget(1L << 20);
		List<VectorCollection> published = new ArrayList<>();
		assertThatThrownBy(() -> parts(files, budget).lifecycle().load("c", published::add))
			.isInstanceOf(IllegalStateException.class)
			.hasMessage("its log holds vectors of dimension 3");

		assertThat(published).isEmpty();
		assertThat(budget.reservedBytes()).as("the snapshot's reservation handed back").isZero();
	}

	@Test
	void deletesOrphanLogsAndACollectionsFiles() throws IOException {
		CollectionFiles files = new CollectionFiles(this.dir);
		Parts parts = parts(files, new DeviceMemoryBudget(1L << 20));
		Files.write(files.logOf("orphan"), new byte[0]);
		VectorCollection kept = new VectorCollection("kept", 2, Metric.DOT);
		parts.lifecycle().create(kept);

		parts.lifecycle().deleteOrphanLogs();

		assertThat(files.logOf("orphan")).doesNotExist();
		assertThat(files.logOf("kept")).exists();
		kept.commitLock.lock();
		kept.lock.writeLock().lock();
		try {
			parts.lifecycle().delete(kept);
			parts.lifecycle().release(kept);
		}
		finally {
			kept.lock.writeLock().unlock();
			kept.commitLock.unlock();
		}
		assertThat(files.fileOf("kept")).doesNotExist();
		assertThat(files.logOf("kept")).doesNotExist();
	}

}
