package dev.gpucompute.sample.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.sample.storage.CollectionFiles.StoredCollection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The data directory's files: round trip, atomic replacement, and damaged or leftover files. */
class CollectionFilesTests {

	@TempDir
	Path dir;

	@Test
	void roundTrip() throws IOException {
		CollectionFiles files = new CollectionFiles(this.dir);
		float[] vectors = { 1.5f, -2f, Float.MIN_VALUE, 3e30f, 0f, -0f, 7f, 8f, 99f };
		// The host mirror may be longer than size * dimension; only the used part is written.
		files.write("c", 1, 2, List.of("a", "ü€", "long-" + "x".repeat(300)), vectors);
		StoredCollection read = files.read("c", files.fileOf("c"));
		assertThat(read.metric()).isEqualTo(1);
		assertThat(read.dimension()).isEqualTo(2);
		assertThat(read.ids()).containsExactly("a", "ü€", "long-" + "x".repeat(300));
		assertThat(read.vectors()).containsExactly(1.5f, -2f, Float.MIN_VALUE, 3e30f, 0f, -0f);
		assertThat(files.names()).containsExactly("c");
	}

	@Test
	void aFailedWriteLeavesTheOldFileWholeAndNoTemporaryFile() throws IOException {
		CollectionFiles files = new CollectionFiles(this.dir);
		files.write("c", 0, 2, List.of("a"), new float[] { 1, 2 });
		byte[] old = Files.readAllBytes(files.fileOf("c"));
		// Two ids but the values of one vector: the write fails half-way through the temporary file.
		assertThatThrownBy(() -> files.write("c", 0, 2, List.of("a", "b"), new float[] { 3, 4 }))
			.isInstanceOf(IndexOutOfBoundsException.class);
		assertThat(Files.readAllBytes(files.fileOf("c"))).isEqualTo(old);
		try (var list = Files.list(this.dir)) {
			assertThat(list.map((p) -> p.getFileName().toString()).toList()).containsExactly("c.vec");
		}
	}

	@Test
	void leftoverTemporaryFilesAreDeletedAndDamagedFilesRefused() throws IOException {
		CollectionFiles files = new CollectionFiles(this.dir);
		files.write("good", 0, 3, List.of("a", "b"), new float[] { 1, 2, 3, 4, 5, 6 });
		files.write("flipped", 0, 3, List.of("a", "b"), new float[] { 1, 2, 3, 4, 5, 6 });
		files.write("short", 0, 3, List.of("a", "b"), new float[] { 1, 2, 3, 4, 5, 6 });
		byte[] flipped = Files.readAllBytes(files.fileOf("flipped"));
		flipped[flipped.length - 12] ^= 0x40;
		Files.write(files.fileOf("flipped"), flipped);
		byte[] whole = Files.readAllBytes(files.fileOf("short"));
		Files.write(files.fileOf("short"), java.util.Arrays.copyOf(whole, whole.length - 20));
		Files.write(this.dir.resolve("crashed.12345.tmp"), new byte[] { 1, 2, 3 });

		assertThat(files.names()).containsExactly("flipped", "good", "short");
		assertThat(files.read("good", files.fileOf("good")).vectors()).containsExactly(1, 2, 3, 4, 5, 6);
		assertThat(Files.exists(this.dir.resolve("crashed.12345.tmp"))).isFalse();
		assertThatThrownBy(() -> files.read("flipped", files.fileOf("flipped"))).hasMessageContaining("checksum");
		assertThatThrownBy(() -> files.read("short", files.fileOf("short"))).hasMessageContaining("truncated");
	}

}
