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
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The compiled-kernel cache: key function and atomic files. Pure Java. */
class KernelCacheTests {

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
		// Each writer stores its own entry of 4 MiB, long enough to write that reads fall inside a write; a
		// reader must see one entry whole, whichever, never nothing, a part or a mix.
		int writers = 3;
		List<byte[]> entries = new ArrayList<>();
		for (int w = 0; w <= writers; w++) {
			byte[] entry = new byte[4 << 20];
			for (int i = 0; i < entry.length; i++) {
				entry[i] = (byte) (i * 31 + w * 101);
			}
			entries.add(entry);
		}
		assertThat(cache.write("k", key, entries.get(writers))).as("the entry before the writers").isTrue();
		int wanted = 50;
		AtomicInteger writing = new AtomicInteger();
		AtomicLong writesEnded = new AtomicLong();
		AtomicInteger writersFinished = new AtomicInteger();
		AtomicInteger overlapped = new AtomicInteger();
		ExecutorService executor = Executors.newFixedThreadPool(2 * writers);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int w = 0; w < writers; w++) {
				byte[] entry = entries.get(w);
				futures.add(executor.submit(() -> {
					try {
						// Until the readers have seen enough reads overlap a write; bounded.
						for (int round = 0; round < 200 && overlapped.get() < wanted; round++) {
							writing.incrementAndGet();
							try {
								assertThat(cache.write("k", key, entry)).isTrue();
							}
							finally {
								writing.decrementAndGet();
								writesEnded.incrementAndGet();
							}
						}
					}
					finally {
						writersFinished.incrementAndGet();
					}
				}));
				futures.add(executor.submit(() -> {
					while (overlapped.get() < wanted && writersFinished.get() < writers) {
						boolean during = writing.get() > 0;
						long ended = writesEnded.get();
						byte[] read = cache.read("k", key);
						// A write was under way when the read began, or one ended while it read: they overlapped.
						if (during || writesEnded.get() != ended) {
							overlapped.incrementAndGet();
						}
						assertThat(read).as("an entry replaced by a rename is there throughout").isNotNull();
						assertThat(whichEntry(entries, read)).as("a read of %d bytes is one whole entry", read.length)
							.isNotNegative();
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
		assertThat(overlapped.get()).as("reads that overlapped a write").isGreaterThanOrEqualTo(wanted);
		assertThat(whichEntry(entries, cache.read("k", key))).as("the last write, whole").isBetween(0, writers - 1);
	}

	/** The index of the entry {@code read} equals, or -1. */
	private static int whichEntry(List<byte[]> entries, byte[] read) {
		for (int i = 0; i < entries.size(); i++) {
			if (java.util.Arrays.equals(entries.get(i), read)) {
				return i;
			}
		}
		return -1;
	}

	@Test
	void anUnwritableDirectoryIsNotFatal(@TempDir Path dir) throws Exception {
		Path file = Files.writeString(dir.resolve("not-a-directory"), "x");
		KernelCache cache = new KernelCache(file);
		assertThat(cache.write("k", "abc", new byte[] { 1 })).isFalse();
		assertThat(cache.read("k", "abc")).isNull();
	}

}
