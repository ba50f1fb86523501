package dev.gpucompute.sample;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.FaultyDisk;
import dev.gpucompute.test.GpuCpuBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The service under storage faults, over HTTP, on three CPU devices ({@code gpu.cpu.devices=3}) so
 * that a collection spans several shards: its data directory is written through a
 * {@link FaultyDisk}. A JSON or binary write on a full disk answers 507, one on a failing disk 503
 * with {@code Retry-After}, each a problem detail naming the collection and saying nothing was
 * stored, and leaves every count and search as it was; reads go on; the storage health component
 * takes the instance out of the readiness group while a log refuses writes, and everything resumes
 * by itself once the disk does. Boot's {@code diskSpace} component watches the data directory.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "gpu.devices=all", "gpu.cpu.devices=3", "gpu.cpu.threads=1", "gpu.streams.pool-size=2",
				"gpu.streams.max-size=8", "sample.memory-budget=64000B", "sample.limits.max-results=20000",
				"sample.storage.retry-after=200ms", "sample.storage.health.min-free=1KB" })
@GpuCpuBackend
// Closed after the class, before its data directory is deleted: a cached (paused) service would fold its
// logs into a directory that no longer exists, and log that as an error.
@DirtiesContext
@Import(StorageFaultsAppTests.FaultyStorage.class)
@ExtendWith(QuietOutputExtension.class)
class StorageFaultsAppTests {

	private static final int DIM = 16;

	@TempDir
	static Path data;

	@DynamicPropertySource
	static void dataDir(DynamicPropertyRegistry registry) {
		registry.add("sample.data-dir", () -> data.toString());
	}

	/** The service's files, written through a disk the tests can fill or break. */
	@TestConfiguration(proxyBeanMethods = false)
	static class FaultyStorage {

		@Bean
		FaultyDisk faultyDisk() {
			return new FaultyDisk();
		}

		@Bean
		@Primary
		CollectionFiles faultyFiles(FaultyDisk disk, SampleProperties properties) {
			return disk.files(properties.getDataDir());
		}

	}

	@LocalServerPort
	int port;

	@Autowired
	FaultyDisk disk;

	Http http;

	@BeforeEach
	void emptyService() {
		this.http = new Http("http://localhost:" + this.port);
		this.http.deleteAllCollections();
	}

	@AfterEach
	void healDisk() {
		this.disk.heal();
		this.disk.allFiles();
	}

	@Test
	void jsonAndBinaryWritesOnAFullDiskAnswer507AndChangeNothingOnAnyDevice() {
		assertThat(this.http.putJson("/collections/c", "{\"dimension\": 16, \"metric\": \"dot\"}").status()).isEqualTo(201);
		Random random = new Random(3);
		for (int from = 0; from < 2600; from += 400) {
			Http.Response written = this.http.post("/collections/c/vectors?idPrefix=v&idStart=" + from,
					"application/octet-stream",
					Http.littleEndian(BruteForce.randomVectors(random, Math.min(400, 2600 - from), DIM)));
			assertThat(written.status()).as(written.body()).isEqualTo(200);
		}
		JsonNode info = this.http.get("/collections/c").json();
		assertThat(info.get("devices").size()).as(info.toString()).isEqualTo(3);
		// A write replacing a row on each shard and adding rows, as JSON; one adding rows, as binary.
		List<String> jsonIds = new ArrayList<>(List.of("v5", "v1500", "v2599"));
		jsonIds.addAll(IntStream.range(0, 10).mapToObj((i) -> "j" + i).toList());
		float[][] jsonVectors = BruteForce.randomVectors(random, jsonIds.size(), DIM);
		float[][] binaryVectors = BruteForce.randomVectors(random, 300, DIM);
		List<String> before = visible(jsonVectors, binaryVectors);
		this.disk.onlyFilesEndingWith(".wal");
		this.disk.spaceLeft(0);

		Http.Response json = this.http.postJson("/collections/c/vectors", Map.of("ids", jsonIds, "vectors", jsonVectors));
		Http.Response binary = this.http.post("/collections/c/vectors?idPrefix=b", "application/octet-stream",
				Http.littleEndian(binaryVectors));

		for (Http.Response refused : List.of(json, binary)) {
			assertThat(refused.status()).as(refused.body()).isEqualTo(507);
			assertThat(refused.contentType()).isEqualTo("application/problem+json");
			JsonNode problem = refused.json();
			assertThat(problem.get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:insufficient-storage");
			assertThat(problem.get("title").asString()).isEqualTo("Insufficient storage");
			assertThat(problem.get("collection").asString()).isEqualTo("c");
			assertThat(problem.get("stored").asBoolean()).isFalse();
			assertThat(problem.get("detail").asString())
				.startsWith("Nothing of this write was stored in collection 'c': the data directory's file system has "
						+ "no space left (No space left on device (injected))");
			assertThat(problem.get("instance").asString()).isEqualTo("/collections/c/vectors");
			assertThat(refused.header("Retry-After")).isNull();
		}
		assertThat(visible(jsonVectors, binaryVectors)).as("counts, shards and searches").isEqualTo(before);
		JsonNode storage = this.http.get("/actuator/health/storage").json();
		assertThat(storage.at("/details/refusedWrites").asLong()).isGreaterThanOrEqualTo(2);
		assertThat(storage.at("/details/lastRefusal").asString()).contains("No space left on device");

		// Space is back: both writes go through, no restart.
		this.disk.heal();
		assertThat(this.http.postJson("/collections/c/vectors", Map.of("ids", jsonIds, "vectors", jsonVectors)).body())
			.isEqualTo("{\"added\":10,\"replaced\":3,\"size\":2610}");
		assertThat(this.http.post("/collections/c/vectors?idPrefix=b", "application/octet-stream",
				Http.littleEndian(binaryVectors)).body()).isEqualTo("{\"added\":300,\"replaced\":0,\"size\":2910}");
	}

	@Test
	void aFailingDiskAnswers503WithRetryAfterAndTakesTheInstanceOutOfTheReadinessGroupUntilItRecovers() {
		assertThat(this.http.putJson("/collections/d", "{\"dimension\": 16, \"metric\": \"cosine\"}").status()).isEqualTo(201);
		Random random = new Random(5);
		float[][] vectors = BruteForce.randomVectors(random, 100, DIM);
		assertThat(this.http.post("/collections/d/vectors?idPrefix=d", "application/octet-stream",
				Http.littleEndian(vectors)).status()).isEqualTo(200);
		assertThat(this.http.get("/actuator/health/readiness").status()).isEqualTo(200);
		Map<String, Object> search = Map.of("vectors", BruteForce.randomVectors(random, 2, DIM), "k", 100);
		String searched = this.http.postJson("/collections/d/search", search).body();
		this.disk.failForce = true;

		Http.Response refused = this.http.postJson("/collections/d/vectors",
				Map.of("ids", List.of("d1", "new"), "vectors", BruteForce.randomVectors(random, 2, DIM)));

		assertThat(refused.status()).as(refused.body()).isEqualTo(503);
		assertThat(refused.header("Retry-After")).isEqualTo("1");
		JsonNode problem = refused.json();
		assertThat(problem.get("type").asString()).isEqualTo("urn:gpu-compute:sample:problem:storage-unavailable");
		assertThat(problem.get("collection").asString()).isEqualTo("d");
		assertThat(problem.get("stored").asBoolean()).isFalse();
		assertThat(problem.get("detail").asString()).startsWith("Nothing of this write was stored in collection 'd'")
			.contains("Input/output error (injected force)");
		// Out of the readiness group while the log refuses writes; alive, and reads go on.
		Http.Response readiness = this.http.get("/actuator/health/readiness");
		assertThat(readiness.status()).isEqualTo(503);
		assertThat(readiness.json().get("status").asString()).isEqualTo("OUT_OF_SERVICE");
		assertThat(this.http.get("/actuator/health/liveness").status()).isEqualTo(200);
		JsonNode storage = this.http.get("/actuator/health/storage").json();
		assertThat(storage.get("status").asString()).isEqualTo("OUT_OF_SERVICE");
		assertThat(storage.at("/details/brokenLogs/d").asString()).contains("Input/output error");
		assertThat(this.http.get("/collections/d").json().get("size").asInt()).isEqualTo(100);
		assertThat(this.http.postJson("/collections/d/search", search).body()).isEqualTo(searched);
		assertThat(this.http.postJson("/collections/d/vectors",
				Map.of("ids", List.of("other"), "vectors", BruteForce.randomVectors(random, 1, DIM))).status())
			.isEqualTo(503);

		// The disk recovers: the log is folded in the background and the instance is ready again.
		this.disk.heal();
		await().atMost(Duration.ofSeconds(20))
			.untilAsserted(() -> assertThat(this.http.get("/actuator/health/readiness").status()).isEqualTo(200));
		assertThat(this.http.get("/actuator/health/storage").json().at("/details/brokenLogs").size()).isZero();
		assertThat(this.http.postJson("/collections/d/search", search).body()).isEqualTo(searched);
		assertThat(this.http.postJson("/collections/d/vectors",
				Map.of("ids", List.of("d1", "new"), "vectors", BruteForce.randomVectors(random, 2, DIM))).body())
			.isEqualTo("{\"added\":1,\"replaced\":1,\"size\":101}");
	}

	@Test
	void bootsDiskSpaceComponentWatchesTheDataDirectory() {
		JsonNode diskSpace = this.http.get("/actuator/health/diskSpace").json();
		assertThat(diskSpace.at("/details/path").asString()).isEqualTo(data.toAbsolutePath().toString());
		JsonNode storage = this.http.get("/actuator/health/storage").json();
		assertThat(storage.get("status").asString()).isEqualTo("UP");
		assertThat(storage.at("/details/path").asString()).isEqualTo(data.toAbsolutePath().normalize().toString());
		assertThat(storage.at("/details/minFree").asLong()).isEqualTo(1024);
	}

	/** GET of the collection, and every vector ranked for each of the given vectors (k = size). */
	private List<String> visible(float[][]... vectorSets) {
		List<String> visible = new ArrayList<>();
		JsonNode info = this.http.get("/collections/c").json();
		visible.add(info.toString());
		int size = info.get("size").asInt();
		for (float[][] vectors : vectorSets) {
			float[][] queries = java.util.Arrays.copyOf(vectors, Math.min(4, vectors.length));
			Http.Response searched = this.http.postJson("/collections/c/search", Map.of("vectors", queries, "k", size));
			assertThat(searched.status()).as(searched.body()).isEqualTo(200);
			visible.add(searched.body());
		}
		return visible;
	}

}
