package dev.gpucompute.sample;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import tools.jackson.databind.JsonNode;

import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.WriteAheadLog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The service on a real, small file system: a tmpfs of 8 MB (2 MB of it taken by other data)
 * mounted for this test, over three CPU devices. Bulk writes until the disk is full: every write
 * answered 200 is kept, the first refused one answers 507 and nothing of it is visible, folds that
 * no longer fit keep the old snapshot, reads go on, the storage component and the readiness group
 * say OUT_OF_SERVICE; once space is freed writes resume without a restart; a shutdown with the disk
 * full keeps the snapshot and the log; the files then hold exactly the acknowledged vectors.
 *
 * <p>Mounting needs root (CI runs the build as root): elsewhere, or where mounting fails (a
 * container without the capability), the test is skipped with the reason; {@code StorageFaultsTests}
 * and {@code StorageFaultsAppTests} cover the same paths with injected faults. Where {@code .ci/run}
 * found that it can mount a tmpfs it sets {@code TMPFS_MOUNT_REQUIRED=1}, and a skip fails instead.
 * The mount is removed after the test, whatever happened.
 */
@ExtendWith(QuietOutputExtension.class)
class TmpfsStorageTests {

	private static final int DIM = 64;

	private static final int BATCH = 500;

	private static Path mountPoint;

	private static boolean mounted;

	@BeforeAll
	static void mountTmpfs() throws Exception {
		Command id = Command.run("id", "-u");
		assumeOrRequired(id.exit() == 0 && id.output().trim().equals("0"),
				"mounting a tmpfs needs root (uid " + id.output().trim() + "); StorageFaultsTests covers this with "
						+ "injected faults");
		mountPoint = Files.createTempDirectory("sample-tmpfs-");
		Command mount = Command.run("mount", "-t", "tmpfs", "-o", "size=8m", "sample-tmpfs", mountPoint.toString());
		if (mount.exit() != 0) {
			Files.deleteIfExists(mountPoint);
		}
		assumeOrRequired(mount.exit() == 0, "mount -t tmpfs failed (" + mount.output().trim() + "); StorageFaultsTests "
				+ "covers this with injected faults");
		mounted = true;
	}

	/** Skips with the reason, or fails where {@code TMPFS_MOUNT_REQUIRED=1} says that this machine can mount. */
	private static void assumeOrRequired(boolean condition, String reason) {
		if (!condition && "1".equals(System.getenv("TMPFS_MOUNT_REQUIRED"))) {
			fail("TMPFS_MOUNT_REQUIRED=1 but " + reason);
		}
		assumeTrue(condition, reason);
	}

	@AfterAll
	static void unmountTmpfs() throws Exception {
		if (mounted) {
			Command umount = Command.run("umount", mountPoint.toString());
			if (umount.exit() != 0) {
				// Something still holds a file: detach now, the kernel frees it once released.
				Command.run("umount", "-l", mountPoint.toString());
			}
			mounted = false;
		}
		if (mountPoint != null) {
			Files.deleteIfExists(mountPoint);
		}
	}

	@Test
	@Timeout(value = 5, unit = TimeUnit.MINUTES)
	void aFullDiskRefusesWritesWithoutLosingOrShowingAnyAndWritesResumeOnceSpaceIsFree() throws Exception {
		Path data = mountPoint.resolve("data");
		Path ballast = mountPoint.resolve("other-data");
		Path filler = mountPoint.resolve("filler");
		Files.write(ballast, new byte[2 << 20]);
		Map<String, float[]> acknowledged = new LinkedHashMap<>();
		Random random = new Random(22);
		CollectionFiles files = new CollectionFiles(data);

		try (ConfigurableApplicationContext app = start(data)) {
			Http http = http(app);
			assertThat(http.putJson("/collections/c", "{\"dimension\": 64, \"metric\": \"dot\"}").status()).isEqualTo(201);

			// Bulk writes until the disk is full.
			Http.Response refused = null;
			for (int batch = 0; batch < 400 && refused == null; batch++) {
				float[][] vectors = BruteForce.randomVectors(random, BATCH, DIM);
				Http.Response response = http.post("/collections/c/vectors?idPrefix=r" + batch + "-",
						"application/octet-stream", Http.littleEndian(vectors));
				if (response.status() == 200) {
					for (int i = 0; i < BATCH; i++) {
						acknowledged.put("r" + batch + "-" + i, vectors[i]);
					}
				}
				else {
					refused = response;
				}
			}
			assertThat(refused).as("a write refused before 400 batches").isNotNull();
			assertNothingStored(refused, "c");
			assertVisibleIsExactly(http, acknowledged.keySet());
			assertThat(http.get("/collections/c").json().get("devices").size()).as("shards").isGreaterThan(1);
			// Folds stopped fitting before the disk filled: the snapshot that is there is whole, nothing half-written.
			JsonNode storage = http.get("/actuator/health/storage").json();
			assertThat(storage.at("/details/failedFolds/c").asString()).contains("No space left on device");
			assertThat(files.read("c", files.fileOf("c")).ids()).isSubsetOf(acknowledged.keySet());
			assertThat(temporaryFiles(data)).isEmpty();

			// The last bytes taken too: a JSON write (more than the slack of the log's last page) is refused as
			// well; reads go on.
			fill(filler);
			Http.Response json = http.postJson("/collections/c/vectors", Map.of("ids",
					IntStream.range(0, 20).mapToObj((i) -> "json-" + i).toList(), "vectors",
					BruteForce.randomVectors(random, 20, DIM)));
			assertNothingStored(json, "c");
			assertVisibleIsExactly(http, acknowledged.keySet());
			assertThat(storage(http).get("status").asString()).isEqualTo("OUT_OF_SERVICE");
			assertThat(http.get("/actuator/health/readiness").status()).isEqualTo(503);
			assertThat(http.get("/actuator/health/liveness").status()).isEqualTo(200);

			// Space is freed: writes resume by themselves, JSON and binary.
			Files.delete(filler);
			Files.delete(ballast);
			await().atMost(Duration.ofSeconds(30))
				.untilAsserted(() -> assertThat(http.get("/actuator/health/readiness").status()).isEqualTo(200));
			float[][] more = BruteForce.randomVectors(random, 3, DIM);
			Http.Response resumed = http.postJson("/collections/c/vectors",
					Map.of("ids", List.of("json-0", "json-1", "json-2"), "vectors", more));
			assertThat(resumed.status()).as(resumed.body()).isEqualTo(200);
			for (int i = 0; i < 3; i++) {
				acknowledged.put("json-" + i, more[i]);
			}
			float[][] binary = BruteForce.randomVectors(random, 100, DIM);
			resumed = http.post("/collections/c/vectors?idPrefix=after-", "application/octet-stream",
					Http.littleEndian(binary));
			assertThat(resumed.status()).as(resumed.body()).isEqualTo(200);
			for (int i = 0; i < 100; i++) {
				acknowledged.put("after-" + i, binary[i]);
			}
			assertVisibleIsExactly(http, acknowledged.keySet());

			// Shutdown with the disk full again: its fold cannot be written.
			fill(filler);
		}
		byte[] snapshot = Files.readAllBytes(files.fileOf("c"));
		assertThat(temporaryFiles(data)).as("no partial snapshot left").isEmpty();
		assertThat(WriteAheadLog.replay(files.logOf("c"), null).rows()).as("the log is kept for replay").isPositive();
		assertThat(storedInFiles(files)).as("snapshot + log after the failed shutdown fold")
			.containsOnlyKeys(acknowledged.keySet())
			.allSatisfy((id, vector) -> assertThat(vector).as(id).containsExactly(acknowledged.get(id)));

		// A restart with space: everything acknowledged, nothing refused.
		Files.delete(filler);
		try (ConfigurableApplicationContext app = start(data)) {
			Http http = http(app);
			assertVisibleIsExactly(http, acknowledged.keySet());
			assertThat(Files.readAllBytes(files.fileOf("c"))).as("the snapshot the failed fold left").isEqualTo(snapshot);
		}
		assertThat(storedInFiles(files)).containsOnlyKeys(acknowledged.keySet())
			.allSatisfy((id, vector) -> assertThat(vector).as(id).containsExactly(acknowledged.get(id)));
	}

	private static ConfigurableApplicationContext start(Path data) {
		return SpringApplication.run(SampleApplication.class, "--server.port=0", "--gpu.backend=cpu",
				"--gpu.devices=all", "--gpu.cpu.devices=3", "--gpu.cpu.threads=2", "--gpu.streams.pool-size=2",
				"--sample.data-dir=" + data, "--sample.memory-budget=3MB", "--sample.storage.log-fold-size=1MB",
				"--sample.storage.retry-after=200ms", "--sample.storage.health.min-free=1MB",
				"--sample.limits.max-results=100000", "--management.health.diskspace.threshold=1MB",
				"--spring.main.banner-mode=off");
	}

	private static Http http(ConfigurableApplicationContext app) {
		return new Http("http://localhost:" + app.getEnvironment().getProperty("local.server.port"));
	}

	private static JsonNode storage(Http http) {
		return http.get("/actuator/health/storage").json();
	}

	private static void assertNothingStored(Http.Response refused, String collection) {
		assertThat(refused.status()).as(refused.body()).isEqualTo(507);
		JsonNode problem = refused.json();
		assertThat(problem.get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:insufficient-storage");
		assertThat(problem.get("collection").asString()).isEqualTo(collection);
		assertThat(problem.get("stored").asBoolean()).isFalse();
		assertThat(problem.get("detail").asString())
			.startsWith("Nothing of this write was stored in collection '" + collection + "'");
	}

	/** The count, and every id a search ranks with k = size: exactly {@code ids}, on every shard. */
	private static void assertVisibleIsExactly(Http http, Set<String> ids) {
		assertThat(http.get("/collections/c").json().get("size").asInt()).isEqualTo(ids.size());
		float[] query = new float[DIM];
		query[0] = 1;
		Http.Response searched = http.postJson("/collections/c/search", Map.of("vectors", List.of(query), "k", ids.size()));
		assertThat(searched.status()).as(searched.body()).isEqualTo(200);
		Set<String> found = new HashSet<>(Http.Hits.of(searched.json()).get(0).ids());
		assertThat(found).isEqualTo(ids);
	}

	/** Fills the file system: a file grown until a write fails for lack of space. */
	private static void fill(Path filler) throws IOException {
		byte[] block = new byte[4096];
		try (OutputStream out = Files.newOutputStream(filler)) {
			while (true) {
				out.write(block);
				out.flush();
			}
		}
		catch (IOException ex) {
			assertThat(ex.getMessage()).contains("No space left on device");
		}
	}

	private static List<String> temporaryFiles(Path data) throws IOException {
		try (var list = Files.list(data)) {
			return list.map((file) -> file.getFileName().toString()).filter((name) -> name.endsWith(".tmp")).toList();
		}
	}

	/** What a restart would load: the snapshot, then the log's records in order. */
	private static Map<String, float[]> storedInFiles(CollectionFiles files) throws IOException {
		CollectionFiles.StoredCollection snapshot = files.read("c", files.fileOf("c"));
		Map<String, float[]> stored = new LinkedHashMap<>();
		for (int i = 0; i < snapshot.ids().size(); i++) {
			stored.put(snapshot.ids().get(i), Arrays.copyOfRange(snapshot.vectors(), i * DIM, (i + 1) * DIM));
		}
		WriteAheadLog.replay(files.logOf("c"), (record) -> {
			for (int i = 0; i < record.ids().length; i++) {
				stored.put(record.ids()[i], Arrays.copyOfRange(record.rows(), i * DIM, (i + 1) * DIM));
			}
		});
		return stored;
	}

	/** A command's exit status and output. */
	private record Command(int exit, String output) {

		static Command run(String... command) throws IOException, InterruptedException {
			Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
			String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
			if (!process.waitFor(30, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				return new Command(-1, "timed out: " + output);
			}
			return new Command(process.exitValue(), output);
		}

	}

}
