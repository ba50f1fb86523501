package dev.gpucompute.sample.search;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.CollectionFiles.StoredCollection;
import dev.gpucompute.sample.storage.WriteAheadLog;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * No acknowledged write is lost on {@code kill -9}: a child JVM ({@link CrashChild}) writes from
 * several threads, this test reads the acknowledged ids from its stdout and kills it with SIGKILL
 * ({@link Process#destroyForcibly()}) right after, then opens a store on the same data directory
 * and finds every acknowledged id with its exact vector. Also: a torn log tail (a crash mid-append)
 * is dropped, never a failed start.
 *
 * <p>The child runs {@code java} from this JVM's {@code java.home} with this JVM's class path, where a
 * manifest-only jar (how Surefire launches by default) is expanded into the entries of its
 * {@code Class-Path} attribute, so the command does not depend on how the tests were launched.
 */
class CrashRecoveryTests {

	private static final int ACKS_BEFORE_KILL = 600;

	@TempDir
	Path dataDir;

	@Test
	@Timeout(value = 3, unit = TimeUnit.MINUTES)
	void everyAcknowledgedWriteSurvivesKillDashNine() throws Exception {
		ProcessBuilder builder = new ProcessBuilder(javaExecutable(), "-Xmx256m", "-cp", childClasspath(),
				CrashChild.class.getName(), this.dataDir.toString(), "8");
		builder.redirectErrorStream(true);
		Process child = builder.start();
		Set<String> acknowledged = new LinkedHashSet<>();
		List<String> output = new ArrayList<>();
		try (BufferedReader reader = new BufferedReader(
				new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
			String line;
			while (acknowledged.size() < ACKS_BEFORE_KILL && (line = reader.readLine()) != null) {
				if (line.startsWith("ACK ")) {
					acknowledged.add(line.substring(4));
				}
				else if (output.size() < 200) {
					output.add(line);
				}
				if (System.nanoTime() > deadline) {
					break;
				}
			}
			// SIGKILL at once: no shutdown hook, no fold, nothing but what reached the disk.
			child.destroyForcibly();
			assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
		}
		finally {
			child.destroyForcibly();
		}
		assertThat(acknowledged).as("acknowledged writes before the kill; child output: %s", output)
			.hasSizeGreaterThanOrEqualTo(ACKS_BEFORE_KILL);
		assertThat(child.exitValue()).as("killed, not exited").isNotZero();

		Map<String, float[]> stored = reopenAndRead(this.dataDir, "crash");
		for (String id : acknowledged) {
			assertThat(stored).as("acknowledged id %s", id).containsKey(id);
			assertThat(stored.get(id)).as("vector of %s", id)
				.containsExactly(StoreFixture.vectorOf(id, CrashChild.DIMENSION));
		}
	}

	@Test
	void aTornLogTailIsDroppedAndTheRestRecovered() throws Exception {
		try (StoreFixture fixture = new StoreFixture(this.dataDir, CollectionStore.Durability.DEFAULT)) {
			fixture.store.create("torn", 4, Metric.DOT);
		}
		Path logFile = new CollectionFiles(this.dataDir).logOf("torn");
		try (WriteAheadLog log = new WriteAheadLog(logFile, 0, true)) {
			for (int r = 0; r < 3; r++) {
				String id = "r" + r;
				log.sync(log.appendUpsert(new String[] { id }, 1, 4, StoreFixture.vectorOf(id, 4)));
			}
		}
		long intact = Files.size(logFile);
		try (WriteAheadLog log = new WriteAheadLog(logFile, intact, true)) {
			log.appendUpsert(new String[] { "torn" }, 1, 4, StoreFixture.vectorOf("torn", 4));
		}
		// A crash mid-append: the last record's header and part of its payload reached the disk.
		try (var channel = java.nio.channels.FileChannel.open(logFile, java.nio.file.StandardOpenOption.WRITE)) {
			channel.truncate(intact + 13);
		}

		Map<String, float[]> stored = reopenAndRead(this.dataDir, "torn");

		assertThat(stored).containsOnlyKeys("r0", "r1", "r2");
		assertThat(stored.get("r1")).containsExactly(StoreFixture.vectorOf("r1", 4));
	}

	@Test
	void aLogRecordWithAFlippedBitEndsTheReplayThere() throws Exception {
		Path logFile = this.dataDir.resolve("x.wal");
		try (WriteAheadLog log = new WriteAheadLog(logFile, 0, true)) {
			for (int r = 0; r < 3; r++) {
				log.sync(log.appendUpsert(new String[] { "id" + r }, 1, 2, new float[] { r, -r }));
			}
		}
		byte[] bytes = Files.readAllBytes(logFile);
		int recordLength = bytes.length / 3;
		bytes[2 * recordLength + 12] ^= 0x10;
		Files.write(logFile, bytes);
		List<String> seen = new ArrayList<>();

		WriteAheadLog.Replayed replayed = WriteAheadLog.replay(logFile, (record) -> seen.add(record.ids()[0]));

		assertThat(seen).containsExactly("id0", "id1");
		assertThat(replayed.validLength()).isEqualTo(2L * recordLength);
		assertThat(replayed.droppedBytes()).isEqualTo(recordLength);
		// Appending goes on after the intact records.
		try (WriteAheadLog log = new WriteAheadLog(logFile, replayed.validLength(), true)) {
			log.sync(log.appendUpsert(new String[] { "next" }, 1, 2, new float[] { 9, 9 }));
		}
		seen.clear();
		WriteAheadLog.replay(logFile, (record) -> seen.add(record.ids()[0]));
		assertThat(seen).containsExactly("id0", "id1", "next");
	}

	/** Starts a store on the directory (snapshot + log replay), closes it (a fold) and reads the snapshot. */
	private static Map<String, float[]> reopenAndRead(Path dataDir, String name) throws IOException {
		try (StoreFixture fixture = new StoreFixture(dataDir, CollectionStore.Durability.DEFAULT)) {
			assertThat(fixture.store.get(name)).isNotNull();
		}
		CollectionFiles files = new CollectionFiles(dataDir);
		StoredCollection stored = files.read(name, files.fileOf(name));
		Map<String, float[]> byId = new java.util.HashMap<>();
		for (int i = 0; i < stored.ids().size(); i++) {
			byId.put(stored.ids().get(i), java.util.Arrays.copyOfRange(stored.vectors(), i * stored.dimension(),
					(i + 1) * stored.dimension()));
		}
		return byId;
	}

	private static String javaExecutable() {
		Path java = Path.of(System.getProperty("java.home"), "bin", "java");
		return Files.isExecutable(java) ? java.toString()
				: ProcessHandle.current().info().command().orElseThrow(() -> new IllegalStateException("no java"));
	}

	/** This JVM's class path with manifest-only jars (Surefire's booter) expanded. */
	static String childClasspath() throws IOException {
		List<String> entries = new ArrayList<>();
		for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
			if (entry.isEmpty()) {
				continue;
			}
			entries.add(entry);
			Path path = Path.of(entry);
			if (entry.endsWith(".jar") && Files.isRegularFile(path)) {
				try (JarFile jar = new JarFile(path.toFile())) {
					Manifest manifest = jar.getManifest();
					String classPath = (manifest != null) ? manifest.getMainAttributes().getValue("Class-Path") : null;
					if (classPath != null) {
						for (String relative : classPath.trim().split("\\s+")) {
							entries.add(Path.of(path.getParent().toUri().resolve(relative)).toString());
						}
					}
				}
			}
		}
		return String.join(File.pathSeparator, entries);
	}

}
