package dev.gpucompute.sample;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;

import dev.gpucompute.GpuContext;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Collections survive a restart: written through the API, the application closed (which folds
 * every write-ahead log into its snapshot), a new application started on the same data
 * directory, and every search answers exactly as before. Crash recovery from the logs is
 * {@link CrashRecoveryTests}'s.
 */
class RestartTests {

	@TempDir
	Path data;

	@Test
	void collectionsAreWrittenAtShutdownAndLoadedAtStartUp() throws Exception {
		Random random = new Random(5);
		float[][] cosine = BruteForce.randomVectors(random, 1500, 48);
		float[][] dot = BruteForce.randomVectors(random, 40, 5);
		List<String> dotIds = IntStream.range(0, 40).mapToObj((i) -> "d" + i).toList();
		List<Map<String, Object>> searches = List.of(
				Map.of("vectors", BruteForce.randomVectors(random, 3, 48), "k", 25),
				Map.of("vectors", BruteForce.randomVectors(random, 1, 48), "k", 1500));
		Map<String, Object> dotSearch = Map.of("vectors", BruteForce.randomVectors(random, 2, 5), "k", 40);

		List<String> before = new ArrayList<>();
		try (ConfigurableApplicationContext app = start()) {
			Http http = http(app);
			assertThat(http.putJson("/collections/text", "{\"dimension\": 48, \"metric\": \"cosine\"}").status()).isEqualTo(201);
			assertThat(http.putJson("/collections/small", "{\"dimension\": 5, \"metric\": \"dot\"}").status()).isEqualTo(201);
			assertThat(http.putJson("/collections/empty", "{\"dimension\": 7}").status()).isEqualTo(201);
			http.post("/collections/text/vectors?idPrefix=t", "application/octet-stream", Http.littleEndian(cosine));
			http.postJson("/collections/small/vectors", Map.of("ids", dotIds, "vectors", dot));
			before.add(http.get("/collections").body());
			for (Map<String, Object> search : searches) {
				before.add(http.postJson("/collections/text/search", search).body());
			}
			before.add(http.postJson("/collections/small/search", dotSearch).body());
		}
		try (var files = Files.list(this.data)) {
			assertThat(files.map((file) -> file.getFileName().toString()).sorted().toList())
				.as("a snapshot and a log per collection, no temporary file left")
				.containsExactly("empty.vec", "empty.wal", "small.vec", "small.wal", "text.vec", "text.wal");
		}
		for (String name : List.of("empty", "small", "text")) {
			assertThat(Files.size(this.data.resolve(name + ".wal"))).as("a clean shutdown folds the logs").isZero();
		}

		try (ConfigurableApplicationContext app = start()) {
			Http http = http(app);
			List<String> after = new ArrayList<>();
			after.add(http.get("/collections").body());
			for (Map<String, Object> search : searches) {
				after.add(http.postJson("/collections/text/search", search).body());
			}
			after.add(http.postJson("/collections/small/search", dotSearch).body());
			assertThat(after).isEqualTo(before);
			assertThat(before.get(0)).contains("\"name\":\"text\",\"dimension\":48,\"metric\":\"cosine\",\"size\":1500");
			// The loaded collections take writes as usual.
			assertThat(http.postJson("/collections/small/vectors", "{\"ids\":[\"new\"],\"vectors\":[[1,2,3,4,5]]}").body())
				.isEqualTo("{\"added\":1,\"replaced\":0,\"size\":41}");
			GpuContext context = app.getBean(GpuContext.class);
			assertThat(context.memory().liveBuffers()).as("one device buffer per non-empty collection").isEqualTo(2);
		}
	}

	private ConfigurableApplicationContext start() {
		return SpringApplication.run(SampleApplication.class, "--server.port=0", "--gpu.backend=cpu",
				"--gpu.cpu.threads=2", "--gpu.streams.pool-size=2", "--sample.data-dir=" + this.data,
				"--spring.main.banner-mode=off");
	}

	private static Http http(ConfigurableApplicationContext app) {
		return new Http("http://localhost:" + app.getEnvironment().getProperty("local.server.port"));
	}

}
