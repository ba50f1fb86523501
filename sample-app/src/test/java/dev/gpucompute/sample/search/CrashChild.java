package dev.gpucompute.sample.search;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The child JVM of {@link CrashRecoveryTests}: opens a store on {@code args[0]}, then {@code args[1]}
 * threads write small batches of vectors (ids {@code t<thread>-<n>}, values from
 * {@link StoreFixture#vectorOf}) until the process is killed, printing {@code ACK <id>} for every id
 * of a batch whose upsert returned. Never exits on its own (the parent kills it).
 */
public final class CrashChild {

	static final int DIMENSION = 16;

	public static void main(String[] args) throws Exception {
		Path dataDir = Path.of(args[0]);
		int threads = Integer.parseInt(args[1]);
		// A small fold size, so that snapshots are written (and logs emptied) while writes go on.
		StoreFixture fixture = new StoreFixture(dataDir, new CollectionStore.Durability(true, 16 * 1024));
		fixture.store.create("crash", DIMENSION, Metric.DOT);
		PrintStream out = System.out;
		synchronized (out) {
			out.println("READY");
			out.flush();
		}
		for (int t = 0; t < threads; t++) {
			int thread = t;
			new Thread(() -> {
				for (int n = 0;; n++) {
					int batch = 1 + (n % 3);
					List<String> ids = new ArrayList<>(batch);
					float[] rows = new float[batch * DIMENSION];
					for (int b = 0; b < batch; b++) {
						String id = "t" + thread + "-" + n + "-" + b;
						ids.add(id);
						System.arraycopy(StoreFixture.vectorOf(id, DIMENSION), 0, rows, b * DIMENSION, DIMENSION);
					}
					fixture.store.upsert("crash", ids, rows);
					synchronized (out) {
						for (String id : ids) {
							out.println("ACK " + id);
						}
						out.flush();
					}
				}
			}, "writer-" + t).start();
		}
		Thread.currentThread().join();
	}

	private CrashChild() {
	}

}
