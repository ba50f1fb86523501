package dev.gpucompute.sample.search;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.sample.SampleProperties;
import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.WriteAheadLog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The store's side of the write-ahead log: writes the log could not hold are refused before the
 * device write, damage in the middle of a log fails start-up naming the collection, and a delete
 * whose files cannot be deleted keeps the collection.
 */
class StoreDurabilityTests {

	@TempDir
	Path dataDir;

	@Test
	void anIdOverTheLogsLimitIsRefusedBeforeTheDeviceWrite() {
		try (GpuContext context = GpuContext.builder().backend(Backend.CPU).poolSize(2).maxSize(8).cpuThreads(2).open();
				CollectionStore store = new CollectionStore(StoreFixture.engine(context, 2, 2, 64L << 20,
						Duration.ofSeconds(60)), new CollectionFiles(this.dataDir),
						new DeviceMemoryBudget(64L << 20), new CollectionStore.Limits(4096, 16, 30_000, 1000),
						CollectionStore.Durability.DEFAULT)) {
			store.start();
			store.create("c", 2, Metric.DOT);
			// 22,000 characters of 3 UTF-8 bytes each: within max-id-length, over the 65535 bytes of a record.
			String id = "\u20ac".repeat(22_000);

			assertThatThrownBy(() -> store.upsert("c", List.of(id), new float[] { 1, 2 }))
				.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> {
					assertThat(problem.status()).isEqualTo(400);
					assertThat(problem.detail()).contains("66000 bytes long in UTF-8");
				});
			assertThat(store.get("c").size()).isZero();
			// A write whose record would exceed 2 GiB: refused on its ids and dimension alone.
			store.create("wide", 4096, Metric.DOT);
			List<String> many = IntStream.range(0, 140_000).mapToObj((i) -> "v" + i).toList();
			assertThatThrownBy(() -> store.upsert("wide", many, new float[4096]))
				.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> {
					assertThat(problem.status()).isEqualTo(400);
					assertThat(problem.detail()).contains("needs a log record of");
				});
		}
	}

	@Test
	void maxIdLengthIsCappedSoThatEveryIdFitsALogRecord() {
		SampleProperties.Limits limits = new SampleProperties().getLimits();
		limits.setMaxIdLength(SampleProperties.Limits.MAX_ID_LENGTH);
		assertThatThrownBy(() -> limits.setMaxIdLength(SampleProperties.Limits.MAX_ID_LENGTH + 1))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("sample.limits.max-id-length must be between 1 and 21845");
	}

	@Test
	void damageInTheMiddleOfALogFailsStartUpNamingTheCollection() throws IOException {
		try (StoreFixture fixture = new StoreFixture(this.dataDir, CollectionStore.Durability.DEFAULT)) {
			fixture.store.create("mid", 2, Metric.DOT);
		}
		Path logFile = new CollectionFiles(this.dataDir).logOf("mid");
		long recordLength;
		try (WriteAheadLog log = new WriteAheadLog(logFile, 0, true)) {
			for (int r = 0; r < 3; r++) {
				log.sync(log.appendUpsert(new String[] { "r" + r }, 1, 2, new float[] { r, 1 }));
			}
			recordLength = log.size() / 3;
		}
		byte[] bytes = Files.readAllBytes(logFile);
		bytes[(int) recordLength + 14] ^= 0x01;
		Files.write(logFile, bytes);

		assertThatThrownBy(() -> new StoreFixture(this.dataDir, CollectionStore.Durability.DEFAULT).close())
			.isInstanceOf(IllegalStateException.class)
			.hasMessageContaining("Collection 'mid' cannot be loaded")
			.hasMessageContaining("damaged in the middle")
			.hasMessageContaining("Remedy");
	}

	@Test
	void aDeleteWhoseFilesCannotBeDeletedKeepsTheCollection() throws IOException {
		CollectionFiles files = new CollectionFiles(this.dataDir);
		try (StoreFixture fixture = new StoreFixture(this.dataDir, CollectionStore.Durability.DEFAULT)) {
			CollectionStore store = fixture.store;
			store.create("kept", 2, Metric.DOT);
			store.upsert("kept", List.of("a"), new float[] { 1, 2 });
			// The log's name now holds a non-empty directory, which deleting it fails on.
			Files.delete(files.logOf("kept"));
			Files.createDirectory(files.logOf("kept"));
			Files.write(files.logOf("kept").resolve("x"), new byte[] { 1 });

			assertThatThrownBy(() -> store.delete("kept")).hasMessageContaining("Could not delete the files");

			assertThat(store.get("kept").size()).isEqualTo(1);
			// Its snapshot was deleted before the log failed; it is written again with every write.
			assertThat(files.read("kept", files.fileOf("kept")).ids()).containsExactly("a");
			Files.delete(files.logOf("kept").resolve("x"));
			store.delete("kept");
			assertThatThrownBy(() -> store.get("kept")).isInstanceOf(ServiceProblem.class);
		}
		assertThat(files.names()).isEmpty();
	}

}
