package dev.gpucompute.sample;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import org.springframework.boot.SpringApplication;

import dev.gpucompute.sample.storage.CollectionFiles;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A collection that cannot be loaded fails start-up with a message naming it, its file, the cause
 * and the remedy, instead of a service that is UP and answers 404 for it.
 */
@ExtendWith(QuietOutputExtension.class)
class StartupFailureTests {

	@TempDir
	Path data;

	@Test
	void aDamagedCollectionFileFailsStartUp() throws Exception {
		CollectionFiles files = new CollectionFiles(this.data);
		files.write("broken", 0, 3, List.of("a", "b"), new float[] { 1, 2, 3, 4, 5, 6 });
		byte[] bytes = Files.readAllBytes(files.fileOf("broken"));
		bytes[bytes.length - 12] ^= 0x40;
		Files.write(files.fileOf("broken"), bytes);

		assertThatThrownBy(this::start).hasStackTraceContaining("Collection 'broken' cannot be loaded from "
				+ files.fileOf("broken"))
			.hasStackTraceContaining("checksum mismatch")
			.hasStackTraceContaining("Remedy");
	}

	@Test
	void aCollectionLargerThanTheMemoryBudgetFailsStartUp() throws Exception {
		CollectionFiles files = new CollectionFiles(this.data);
		files.write("big", 1, 32, java.util.stream.IntStream.range(0, 1000).mapToObj((i) -> "v" + i).toList(),
				new float[1000 * 32]);

		assertThatThrownBy(() -> start("--sample.memory-budget=64KB"))
			.hasStackTraceContaining("Collection 'big' cannot be loaded from " + files.fileOf("big"))
			.hasStackTraceContaining("sample.memory-budget are left")
			.hasStackTraceContaining("raise sample.memory-budget");
	}

	private void start(String... extra) {
		String[] args = { "--server.port=0", "--gpu.backend=cpu", "--gpu.cpu.threads=2", "--gpu.streams.pool-size=2",
				"--sample.data-dir=" + this.data, "--spring.main.banner-mode=off" };
		String[] all = java.util.stream.Stream.concat(java.util.Arrays.stream(args), java.util.Arrays.stream(extra))
			.toArray(String[]::new);
		SpringApplication.run(SampleApplication.class, all).close();
	}

}
