package dev.gpucompute.sample.search;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.sample.BruteForce;
import dev.gpucompute.sample.QuietOutputExtension;
import dev.gpucompute.sample.storage.CollectionFiles;
import dev.gpucompute.sample.storage.FaultyDisk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * The log-first write path on one backend: a write's device storage is allocated (grown with a
 * device-to-device copy) before its record is logged and its rows are copied only after the force,
 * in two stream leases. A write refused by the disk after its storage grew must leave every answer
 * as it was; later writes, replacements included, and a reload onto the device must answer like
 * brute force. {@link StorageFaultsCudaGpuTests} runs it on CUDA (a GPU machine only) and
 * {@link StorageFaultsCpuTests} on the CPU backend in CI, so that the GPU test cannot drift from the
 * store's API and answers unnoticed.
 */
@ExtendWith(QuietOutputExtension.class)
abstract class RefusedWriteSuite {

	private static final int DIM = 64;

	@TempDir
	Path dataDir;

	/** The backend the store runs on. */
	abstract Backend backend();

	@Test
	void aRefusedWriteLeavesTheStorageAsItWasAndLaterWritesAnswerLikeBruteForce() {
		FaultyDisk disk = new FaultyDisk();
		Random random = new Random(17);
		List<String> ids = new ArrayList<>(IntStream.range(0, 1000).mapToObj((i) -> "v" + i).toList());
		List<float[]> vectors = new ArrayList<>(List.of(BruteForce.randomVectors(random, 1000, DIM)));
		float[][] queries = BruteForce.randomVectors(random, 8, DIM);
		try (GpuContext context = GpuContext.builder().backend(backend()).poolSize(4).open()) {
			CollectionStore store = store(context, disk.files(this.dataDir));
			try {
				store.create("c", DIM, Metric.COSINE);
				store.upsert("c", ids, flat(vectors));
				assertLikeBruteForce(store, queries, ids, vectors);
				List<List<Hit>> before = store.search("c", flat(List.of(queries)), 100);

				// 3,000 new rows (the storage grows to hold them) and replacements, refused by a full disk.
				List<String> batch = new ArrayList<>(List.of("v0", "v500", "v999"));
				batch.addAll(IntStream.range(0, 3000).mapToObj((i) -> "n" + i).toList());
				float[][] batchVectors = BruteForce.randomVectors(random, batch.size(), DIM);
				disk.onlyFilesEndingWith(".wal");
				disk.spaceLeft(0);
				assertThatThrownBy(() -> store.upsert("c", batch, flat(List.of(batchVectors))))
					.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> assertThat(problem.status()).isEqualTo(507));
				assertThat(store.get("c").size()).isEqualTo(1000);
				assertThat(store.search("c", flat(List.of(queries)), 100)).isEqualTo(before);

				// A failing force: the record was written, the rows never reach the device.
				disk.heal();
				disk.failForce = true;
				assertThatThrownBy(() -> store.upsert("c", batch, flat(List.of(batchVectors))))
					.isInstanceOfSatisfying(ServiceProblem.class, (problem) -> assertThat(problem.status()).isEqualTo(503));
				assertThat(store.search("c", flat(List.of(queries)), 100)).isEqualTo(before);
				disk.heal();
				await().atMost(Duration.ofSeconds(30)).until(() -> store.storageStatus().brokenLogs().isEmpty());

				store.upsert("c", batch, flat(List.of(batchVectors)));
				for (int i = 0; i < batch.size(); i++) {
					int at = ids.indexOf(batch.get(i));
					if (at >= 0) {
						vectors.set(at, batchVectors[i]);
					}
					else {
						ids.add(batch.get(i));
						vectors.add(batchVectors[i]);
					}
				}
				assertLikeBruteForce(store, queries, ids, vectors);
			}
			finally {
				store.close();
			}
			CollectionStore reloaded = store(context, new CollectionFiles(this.dataDir));
			try {
				assertThat(reloaded.get("c").size()).isEqualTo(4000);
				assertLikeBruteForce(reloaded, queries, ids, vectors);
			}
			finally {
				reloaded.close();
			}
		}
	}

	private static CollectionStore store(GpuContext context, CollectionFiles files) {
		CollectionStore store = new CollectionStore(StoreFixture.engine(context, 2, 2, 64L << 20, Duration.ofSeconds(60)),
				files, new DeviceMemoryBudget(256L << 20), new CollectionStore.Limits(4096, 1024, 256, 1_000_000),
				new CollectionStore.Durability(true, 64L << 20, Duration.ofMillis(100)));
		store.start();
		return store;
	}

	private static void assertLikeBruteForce(CollectionStore store, float[][] queries, List<String> ids,
			List<float[]> vectors) {
		float[][] all = vectors.toArray(float[][]::new);
		for (int k : new int[] { 1, 10, 100 }) {
			List<List<Hit>> results = store.search("c", flat(List.of(queries)), k);
			for (int q = 0; q < queries.length; q++) {
				List<Hit> hits = results.get(q);
				float[] scores = new float[hits.size()];
				for (int i = 0; i < scores.length; i++) {
					scores[i] = hits.get(i).score();
				}
				BruteForce.assertSameResults(hits.stream().map(Hit::id).toList(), scores,
						BruteForce.ranking(ids, all, queries[q], true), k, "k=" + k + " query " + q);
			}
		}
	}

	private static float[] flat(List<float[]> rows) {
		float[] flat = new float[rows.size() * DIM];
		for (int i = 0; i < rows.size(); i++) {
			System.arraycopy(rows.get(i), 0, flat, i * DIM, DIM);
		}
		return flat;
	}

}
