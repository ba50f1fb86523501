package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The compiled-kernel cache: key function and atomic files. Pure Java. */
class KernelCacheTest {

	private static final byte[] SOURCE = "extern \"C\" __global__ void k() {}".getBytes(StandardCharsets.UTF_8);

	@Test
	void keyIsAStableSha256Hex() {
		String key = KernelCache.key(SOURCE, List.of("-lineinfo"), "compute_90", 13000);
		assertThat(key).hasSize(64).matches("[0-9a-f]{64}");
		assertThat(KernelCache.key(SOURCE.clone(), List.of("-lineinfo"), "compute_90", 13000)).isEqualTo(key);
	}

	@Test
	void keyChangesWithEveryInput() {
		String key = KernelCache.key(SOURCE, List.of("-lineinfo"), "compute_90", 13000);
		byte[] otherSource = "extern \"C\" __global__ void k() { }".getBytes(StandardCharsets.UTF_8);
		assertThat(KernelCache.key(otherSource, List.of("-lineinfo"), "compute_90", 13000)).isNotEqualTo(key);
		assertThat(KernelCache.key(SOURCE, List.of(), "compute_90", 13000)).isNotEqualTo(key);
		assertThat(KernelCache.key(SOURCE, List.of("--use_fast_math"), "compute_90", 13000)).isNotEqualTo(key);
		assertThat(KernelCache.key(SOURCE, List.of("-lineinfo"), "compute_80", 13000)).isNotEqualTo(key);
		assertThat(KernelCache.key(SOURCE, List.of("-lineinfo"), "compute_90", 12060)).isNotEqualTo(key);
	}

	@Test
	void keyIsUnambiguous() {
		assertThat(KernelCache.key(SOURCE, List.of("ab"), "compute_90", 13000))
			.isNotEqualTo(KernelCache.key(SOURCE, List.of("a", "b"), "compute_90", 13000));
		assertThat(KernelCache.key(SOURCE, List.of("-a", "-b"), "compute_90", 13000))
			.isNotEqualTo(KernelCache.key(SOURCE, List.of("-b", "-a"), "compute_90", 13000));
	}

	@Test
	void writesAtomicallyAndReadsBack(@TempDir Path dir) throws Exception {
		KernelCache cache = new KernelCache(dir.resolve("nested/cache"));
		String key = KernelCache.key(SOURCE, List.of(), "compute_90", 13000);
		assertThat(cache.read("k", key)).isNull();
		byte[] ptx = ".version 8.0\n.target sm_90\n".getBytes(StandardCharsets.UTF_8);
		assertThat(cache.write("k", key, ptx)).isTrue();
		assertThat(cache.read("k", key)).isEqualTo(ptx);
		assertThat(cache.pathFor("k", key)).exists().hasFileName("k-" + key + ".module");
		try (Stream<Path> files = Files.list(dir.resolve("nested/cache"))) {
			assertThat(files).as("no temporary file is left").containsExactly(cache.pathFor("k", key));
		}
		cache.evict("k", key);
		assertThat(cache.read("k", key)).isNull();
	}

	@Test
	void concurrentWritersNeverExposeAPartialEntry(@TempDir Path dir) throws Exception {
		KernelCache cache = new KernelCache(dir);
		String key = KernelCache.key(SOURCE, List.of(), "compute_90", 13000);
		byte[] big = new byte[4 << 20];
		for (int i = 0; i < big.length; i++) {
			big[i] = (byte) (i * 31);
		}
		ExecutorService executor = Executors.newFixedThreadPool(4);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int w = 0; w < 4; w++) {
				futures.add(executor.submit(() -> cache.write("k", key, big)));
				futures.add(executor.submit(() -> {
					for (int r = 0; r < 20; r++) {
						byte[] read = cache.read("k", key);
						assertThat(read == null || read.length == big.length).isTrue();
					}
				}));
			}
			for (Future<?> future : futures) {
				future.get();
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(cache.read("k", key)).isEqualTo(big);
	}

	@Test
	void anUnwritableDirectoryIsNotFatal(@TempDir Path dir) throws Exception {
		Path file = Files.writeString(dir.resolve("not-a-directory"), "x");
		KernelCache cache = new KernelCache(file);
		assertThat(cache.write("k", "abc", new byte[] { 1 })).isFalse();
		assertThat(cache.read("k", "abc")).isNull();
	}

}
