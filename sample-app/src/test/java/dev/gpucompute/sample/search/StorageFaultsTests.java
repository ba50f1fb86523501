package dev.gpucompute.sample.search;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.StreamLease;
import dev.gpucompute.sample.BruteForce;
import dev.gpucompute.sample.QuietOutputExtension;
import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.FaultyDisk;
import dev.gpucompute.sample.storage.WriteAheadLog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The store under storage faults injected with a {@link FaultyDisk}, over three CPU devices
 * ({@code gpu.cpu.devices=3}) so that a collection spans several shards: a write whose log record
 * is not durable is refused (507 for a full disk, 503 with a retry time for an I/O error) and
 * nothing of it is visible to any count or search on any shard; writes resume by themselves once
 * the disk recovers; a fold or a shutdown on a full disk keeps the old snapshot whole and the log
 * for replay; a write the device refuses after its record was forced is taken back from the log;
 * and under writers, searchers and faults at once no search ever sees a refused write.
 */
@ExtendWith(QuietOutputExtension.class)
class StorageFaultsTests {

	private static final int DIM = 16;

	/** Room for 1,000 rows of dimension 16 per device. */
	private static final long BUDGET = 1000L * DIM * Float.BYTES;

	private static final Duration RETRY = Duration.ofMillis(50);

	@TempDir
	Path dataDir;

	private final FaultyDisk disk = new FaultyDisk();

	private GpuDevices devices;

	private final List<CollectionStore> stores = new ArrayList<>();

	@BeforeEach
	void open() {
		this.devices = StoreFixture.threeCpuDevices();
	}

	@AfterEach
	void close() {
		this.stores.forEach(CollectionStore::close);
		this.devices.close();
	}

	private CollectionStore store(CollectionFiles files, long foldBytes) {
		CollectionStore store = new CollectionStore(StoreFixture.searchDevices(this.devices, BUDGET), files, new CollectionStore.Limits(4096, 1024, 256,
				1_000_000), new CollectionStore.Durability(true, foldBytes, RETRY));
		this.stores.add(store);
		store.start();
		return store;
	}

	/**
	 * What counts and searches show. (Not the budgets: a refused write may leave its shard's storage
	 * grown, as the next write would have grown it, but never a shard of its own.)
	 */
	private record Visible(CollectionInfo info, List<List<Hit>> all) {
	}

	/** Everything visible: the info (size, shards) and, for each query, every vector ranked (k = size). */
	private static Visible visible(CollectionStore store, float[] queries) {
		CollectionInfo info = store.get("c");
		return new Visible(info, store.search("c", queries, info.size()));
	}

	@Test
	void aWriteWhoseRecordIsNotDurableIsNotVisibleOnAnyShardAndWritesResumeByThemselves() throws IOException {
		CollectionStore store = store(this.disk.files(this.dataDir), 64L << 20);
		store.create("c", DIM, Metric.DOT);
		Map<String, float[]> acknowledged = new LinkedHashMap<>();
		for (int from = 0; from < 2600; from += 400) {
			write(store, acknowledged, ids("v", from, Math.min(2600, from + 400)));
		}
		assertThat(store.get("c").placements()).extracting(CollectionInfo.Placement::device).containsExactly(0, 1, 2);
		Path log = new CollectionFiles(this.dataDir).logOf("c");

		// A full disk: replaces a row on every shard and adds rows that need a shard's storage to grow.
		List<String> fullDiskWrite = new ArrayList<>(List.of("v5", "v1500", "v2599"));
		fullDiskWrite.addAll(ids("full", 0, 300));
		float[] fullDiskRows = rows(fullDiskWrite);
		float[] queries = concat(rows(List.of("v5", "v1500", "v2599", "full0", "full299")), randomRows(3));
		Visible before = visible(store, queries);
		long logBefore = Files.size(log);
		this.disk.onlyFilesEndingWith(".wal");
		this.disk.spaceLeft(100);

		assertThatThrownBy(() -> store.upsert("c", fullDiskWrite, fullDiskRows))
			.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> {
				assertThat(problem.status()).isEqualTo(507);
				assertThat(problem.type()).isEqualTo("insufficient-storage");
				assertThat(problem.detail()).startsWith("Nothing of this write was stored in collection 'c'")
					.contains("no space left");
				assertThat(problem.properties()).containsEntry("collection", "c").containsEntry("stored", false);
				assertThat(problem.retryAfter()).isEmpty();
			});
		assertThat(visible(store, queries)).isEqualTo(before);
		assertThat(Files.size(log)).as("the partial record is cut off").isEqualTo(logBefore);
		assertThat(store.storageStatus().refusedWrites()).isEqualTo(1);
		assertThat(store.storageStatus().brokenLogs()).as("a failed append that was cut off breaks nothing").isEmpty();

		// An I/O error on the force: the record was written but is not durable.
		List<String> failedForceWrite = new ArrayList<>(List.of("v7", "v1700", "v2500"));
		failedForceWrite.addAll(ids("eio", 0, 50));
		this.disk.heal();
		this.disk.allFiles();
		this.disk.failForce = true;
		assertThatThrownBy(() -> store.upsert("c", failedForceWrite, rows(failedForceWrite)))
			.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> {
				assertThat(problem.status()).isEqualTo(503);
				assertThat(problem.type()).isEqualTo("storage-unavailable");
				assertThat(problem.detail()).startsWith("Nothing of this write was stored in collection 'c'");
				assertThat(problem.retryAfter()).contains(Duration.ofSeconds(1));
			});
		assertThat(visible(store, queries)).isEqualTo(before);
		assertThat(Files.size(log)).as("the unforced record is cut off").isEqualTo(logBefore);
		assertThat(store.storageStatus().brokenLogs()).containsKey("c");
		// While the disk fails, the log refuses writes (its recovery fails too) and reads go on.
		assertThatThrownBy(() -> store.upsert("c", List.of("late"), rows(List.of("late"))))
			.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> assertThat(problem.status()).isEqualTo(503));
		assertThat(visible(store, queries)).isEqualTo(before);

		// The disk recovers: the log is folded in the background and takes writes again, no restart.
		this.disk.heal();
		await().atMost(Duration.ofSeconds(20)).until(() -> store.storageStatus().brokenLogs().isEmpty());
		write(store, acknowledged, fullDiskWrite);
		assertThat(store.get("c").size()).isEqualTo(2900);

		// After a restart: exactly the acknowledged writes, with their vectors.
		store.close();
		assertThat(storedAfterRestart()).containsOnlyKeys(acknowledged.keySet())
			.allSatisfy((id, vector) -> assertThat(vector).as(id).containsExactly(acknowledged.get(id)));
	}

	@Test
	void aFoldOrAShutdownOnAFullDiskKeepsTheOldSnapshotWholeAndTheLogForReplay() throws IOException {
		CollectionStore store = store(this.disk.files(this.dataDir), 8 * 1024);
		CollectionFiles files = new CollectionFiles(this.dataDir);
		store.create("c", DIM, Metric.DOT);
		Map<String, float[]> acknowledged = new LinkedHashMap<>();
		write(store, acknowledged, ids("v", 0, 200));
		store.flushAll();
		byte[] snapshot = Files.readAllBytes(files.fileOf("c"));
		assertThat(Files.size(files.logOf("c"))).isZero();

		// New snapshots cannot be written (a full disk), the log can: writes go on, folds fail.
		this.disk.onlyFilesEndingWith(".tmp");
		this.disk.spaceLeft(4096);
		for (int from = 200; from < 700; from += 100) {
			write(store, acknowledged, ids("v", from, from + 100));
		}
		await().atMost(Duration.ofSeconds(20)).until(() -> store.storageStatus().failedFolds().containsKey("c"));
		assertThat(store.storageStatus().failedFolds().get("c")).contains("No space left on device");
		assertThat(store.storageStatus().brokenLogs()).isEmpty();
		assertThat(Files.readAllBytes(files.fileOf("c"))).as("the old snapshot").isEqualTo(snapshot);
		assertThat(WriteAheadLog.replay(files.logOf("c"), null).rows()).isEqualTo(500);
		assertThat(temporaryFiles()).isEmpty();

		// Shutdown folds every log: it fails, and nothing acknowledged is lost.
		store.close();
		assertThat(Files.readAllBytes(files.fileOf("c"))).as("the old snapshot after shutdown").isEqualTo(snapshot);
		assertThat(WriteAheadLog.replay(files.logOf("c"), null).rows()).as("the log, kept for replay").isEqualTo(500);
		assertThat(temporaryFiles()).isEmpty();

		assertThat(storedAfterRestart()).containsOnlyKeys(acknowledged.keySet())
			.allSatisfy((id, vector) -> assertThat(vector).as(id).containsExactly(acknowledged.get(id)));
	}

	@Test
	void aWriteTheDeviceRefusesAfterItsRecordIsDurableIsTakenBackFromTheLog() throws IOException {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).cpuThreads(1).poolSize(1).maxSize(1).open()) {
			CollectionStore store = new CollectionStore(
					StoreFixture.engine(context, 1, 1, 16L << 20, Duration.ofMillis(200)), this.disk.files(this.dataDir),
					new DeviceMemoryBudget(BUDGET), new CollectionStore.Limits(4096, 1024, 256, 1_000_000),
					new CollectionStore.Durability(true, 64L << 20, RETRY));
			this.stores.add(store);
			store.start();
			store.create("c", DIM, Metric.DOT);
			Map<String, float[]> acknowledged = new LinkedHashMap<>();
			write(store, acknowledged, ids("v", 0, 10));
			Path log = new CollectionFiles(this.dataDir).logOf("c");
			long logBefore = Files.size(log);
			float[] queries = rows(List.of("v1", "v2"));
			Visible before = visible(store, queries);

			// Every stream is taken: the replacement is logged and forced, then finds no stream in time.
			try (StreamLease taken = context.streams().acquire()) {
				assertThatThrownBy(() -> store.upsert("c", List.of("v1"), randomRows(1)))
					.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> assertThat(problem.status()).isEqualTo(503));
			}
			assertThat(Files.size(log)).as("its record is cut off before it is answered").isEqualTo(logBefore);
			assertThat(visible(store, queries)).isEqualTo(before);
			write(store, acknowledged, List.of("v2"));
			store.close();
		}
		assertThat(storedAfterRestart()).containsOnlyKeys(acknowledged(10))
			.allSatisfy((id, vector) -> assertThat(vector).as(id).containsExactly(StoreFixture.vectorOf(id, DIM)));
	}

	/**
	 * Writers, searchers and a disk that fails now and then, at once: every search sees only writes
	 * that were acknowledged (or are being applied, after their record was forced), never one that
	 * was refused; afterwards the store holds exactly the acknowledged writes, also after a restart.
	 */
	@Test
	@Timeout(value = 2, unit = TimeUnit.MINUTES)
	void underWritersSearchersAndFaultsNoSearchEverSeesARefusedWrite() throws Exception {
		CollectionStore store = store(this.disk.files(this.dataDir), 16 * 1024);
		store.create("c", DIM, Metric.DOT);
		Set<String> acknowledged = ConcurrentHashMap.newKeySet();
		Set<String> refused = ConcurrentHashMap.newKeySet();
		Set<String> seen = ConcurrentHashMap.newKeySet();
		AtomicBoolean stop = new AtomicBoolean();
		AtomicReference<Throwable> unexpected = new AtomicReference<>();
		List<Thread> threads = new ArrayList<>();
		for (int t = 0; t < 4; t++) {
			int writer = t;
			threads.add(new Thread(() -> {
				for (int n = 0; !stop.get() && acknowledged.size() < 2000; n++) {
					List<String> ids = List.of("w" + writer + "-" + n + "-a", "w" + writer + "-" + n + "-b");
					try {
						store.upsert("c", ids, rows(ids));
						acknowledged.addAll(ids);
					}
					catch (ServiceProblem problem) {
						if (problem.status() != 507 && problem.status() != 503) {
							unexpected.compareAndSet(null, problem);
						}
						refused.addAll(ids);
					}
					catch (RuntimeException ex) {
						unexpected.compareAndSet(null, ex);
					}
				}
			}, "writer-" + t));
		}
		for (int s = 0; s < 2; s++) {
			Random random = new Random(s);
			threads.add(new Thread(() -> {
				while (!stop.get()) {
					try {
						int size = store.get("c").size();
						if (size > 0) {
							float[] query = new float[DIM];
							query[random.nextInt(DIM)] = 1;
							store.search("c", query, size).get(0).forEach((hit) -> seen.add(hit.id()));
						}
					}
					catch (RuntimeException ex) {
						unexpected.compareAndSet(null, ex);
					}
				}
			}, "searcher-" + s));
		}
		threads.forEach(Thread::start);
		Random faults = new Random(42);
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
		while (System.nanoTime() < deadline && acknowledged.size() < 2000) {
			switch (faults.nextInt(4)) {
				case 0 -> this.disk.heal();
				case 1 -> {
					this.disk.heal();
					this.disk.onlyFilesEndingWith(".wal");
					this.disk.spaceLeft(faults.nextInt(2000));
				}
				case 2 -> {
					this.disk.heal();
					this.disk.allFiles();
					this.disk.failForce = true;
				}
				default -> {
					this.disk.heal();
					this.disk.onlyFilesEndingWith(".tmp");
					this.disk.spaceLeft(0);
				}
			}
			Thread.sleep(40);
		}
		this.disk.heal();
		this.disk.allFiles();
		stop.set(true);
		for (Thread thread : threads) {
			thread.join(TimeUnit.SECONDS.toMillis(30));
		}
		assertThat(unexpected.get()).as("unexpected failure").isNull();
		assertThat(acknowledged).as("acknowledged writes").isNotEmpty();
		assertThat(refused).as("refused writes").isNotEmpty();
		assertThat(seen).as("ids that searches saw (%d acknowledged, %d refused)", acknowledged.size(), refused.size())
			.isNotEmpty()
			.doesNotContainAnyElementsOf(refused);
		await().atMost(Duration.ofSeconds(20)).until(() -> store.storageStatus().brokenLogs().isEmpty());
		assertThat(store.get("c").size()).isEqualTo(acknowledged.size());

		store.close();
		Map<String, float[]> stored = storedAfterRestart();
		assertThat(stored).containsOnlyKeys(acknowledged)
			.allSatisfy((id, vector) -> assertThat(vector).as(id).containsExactly(StoreFixture.vectorOf(id, DIM)));
	}

	// ---- helpers -------------------------------------------------------------------------------

	/** Opens a store on the data directory without faults, closes it (a fold) and reads the snapshot. */
	private Map<String, float[]> storedAfterRestart() throws IOException {
		CollectionStore reopened = store(new CollectionFiles(this.dataDir), 64L << 20);
		reopened.close();
		CollectionFiles files = new CollectionFiles(this.dataDir);
		CollectionFiles.StoredCollection stored = files.read("c", files.fileOf("c"));
		assertThat(Files.size(files.logOf("c"))).as("folded at the clean shutdown").isZero();
		Map<String, float[]> byId = new LinkedHashMap<>();
		for (int i = 0; i < stored.ids().size(); i++) {
			byId.put(stored.ids().get(i), Arrays.copyOfRange(stored.vectors(), i * DIM, (i + 1) * DIM));
		}
		return byId;
	}

	private List<String> temporaryFiles() throws IOException {
		try (var list = Files.list(this.dataDir)) {
			return list.map((file) -> file.getFileName().toString()).filter((name) -> name.endsWith(".tmp")).toList();
		}
	}

	private static void write(CollectionStore store, Map<String, float[]> acknowledged, List<String> ids) {
		store.upsert("c", ids, rows(ids));
		for (String id : ids) {
			acknowledged.put(id, StoreFixture.vectorOf(id, DIM));
		}
	}

	private static Set<String> acknowledged(int count) {
		return Set.copyOf(ids("v", 0, count));
	}

	private static List<String> ids(String prefix, int from, int to) {
		return IntStream.range(from, to).mapToObj((i) -> prefix + i).toList();
	}

	/** The vectors of {@code ids}, from {@link StoreFixture#vectorOf}, row-major. */
	private static float[] rows(List<String> ids) {
		float[] rows = new float[ids.size() * DIM];
		for (int i = 0; i < ids.size(); i++) {
			System.arraycopy(StoreFixture.vectorOf(ids.get(i), DIM), 0, rows, i * DIM, DIM);
		}
		return rows;
	}

	private static float[] randomRows(int count) {
		float[][] rows = BruteForce.randomVectors(new Random(count), count, DIM);
		float[] flat = new float[count * DIM];
		for (int i = 0; i < count; i++) {
			System.arraycopy(rows[i], 0, flat, i * DIM, DIM);
		}
		return flat;
	}

	private static float[] concat(float[] a, float[] b) {
		float[] all = Arrays.copyOf(a, a.length + b.length);
		System.arraycopy(b, 0, all, a.length, b.length);
		return all;
	}

}
