package dev.gpucompute.sample;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The load test's second process: many concurrent clients search a collection over loopback and
 * check every response against a brute-force reference computed here, from the dataset file the
 * test wrote. Bounded in requests and in time.
 *
 * <p>Arguments: base URL, collection, dataset file, clients, requests, seed, deadline in seconds.
 * Prints one summary line {@code requests=N ok=N mismatches=N errors=N} (plus the first failures)
 * and exits 0 only when every request was answered correctly.
 */
public final class LoadClient {

	private LoadClient() {
	}

	public static void main(String[] args) throws Exception {
		String base = args[0];
		String collection = args[1];
		Dataset dataset = Dataset.read(Path.of(args[2]));
		int clients = Integer.parseInt(args[3]);
		int requests = Integer.parseInt(args[4]);
		long seed = Long.parseLong(args[5]);
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Long.parseLong(args[6]));

		Http http = new Http(base);
		AtomicInteger next = new AtomicInteger();
		AtomicInteger ok = new AtomicInteger();
		AtomicInteger mismatches = new AtomicInteger();
		AtomicInteger errors = new AtomicInteger();
		List<String> failures = Collections.synchronizedList(new ArrayList<>());
		ExecutorService threads = Executors.newFixedThreadPool(clients);
		for (int c = 0; c < clients; c++) {
			threads.execute(() -> {
				int request;
				while ((request = next.getAndIncrement()) < requests && System.nanoTime() < deadline) {
					Random random = new Random(seed * 1_000_003L + request);
					int batch = 1 + random.nextInt(4);
					int k = 1 + random.nextInt(10);
					float[][] queries = BruteForce.randomVectors(random, batch, dataset.dimension());
					try {
						Http.Response response = http.postJson("/collections/" + collection + "/search",
								Map.of("vectors", queries, "k", k));
						if (response.status() != 200) {
							errors.incrementAndGet();
							failures.add("request " + request + ": HTTP " + response.status() + " " + response.body());
							continue;
						}
						List<Http.Hits> hits = Http.Hits.of(response.json());
						if (hits.size() != batch) {
							throw new AssertionError(hits.size() + " result lists for " + batch + " queries");
						}
						for (int q = 0; q < batch; q++) {
							BruteForce.assertSameResults(hits.get(q).ids(), hits.get(q).scores(),
									BruteForce.ranking(dataset.ids(), dataset.vectors(), queries[q], dataset.cosine()),
									k, "request " + request + " query " + q);
						}
						ok.incrementAndGet();
					}
					catch (AssertionError ex) {
						mismatches.incrementAndGet();
						failures.add(ex.getMessage());
					}
					catch (RuntimeException ex) {
						errors.incrementAndGet();
						failures.add("request " + request + ": " + ex);
					}
				}
			});
		}
		threads.shutdown();
		threads.awaitTermination(Math.max(1, TimeUnit.NANOSECONDS.toSeconds(deadline - System.nanoTime()) + 5),
				TimeUnit.SECONDS);
		int sent = Math.min(next.get(), requests);
		System.out.println("requests=" + sent + " ok=" + ok.get() + " mismatches=" + mismatches.get() + " errors="
				+ errors.get());
		failures.stream().limit(5).forEach((failure) -> System.out.println("failure: " + failure));
		System.exit((ok.get() == requests && mismatches.get() == 0 && errors.get() == 0) ? 0 : 1);
	}

	/** The collection's content, as the test wrote it: what the reference searches. */
	record Dataset(List<String> ids, float[][] vectors, int dimension, boolean cosine) {

		static void write(Path file, List<String> ids, float[][] vectors, boolean cosine) throws IOException {
			int dimension = vectors[0].length;
			int bytes = 12;
			for (String id : ids) {
				bytes += 4 + id.getBytes(StandardCharsets.UTF_8).length;
			}
			ByteBuffer out = ByteBuffer.allocate(bytes + vectors.length * dimension * 4).order(ByteOrder.BIG_ENDIAN);
			out.putInt(ids.size()).putInt(dimension).putInt(cosine ? 1 : 0);
			for (String id : ids) {
				byte[] utf8 = id.getBytes(StandardCharsets.UTF_8);
				out.putInt(utf8.length).put(utf8);
			}
			for (float[] row : vectors) {
				for (float value : row) {
					out.putFloat(value);
				}
			}
			Files.write(file, out.array());
		}

		static Dataset read(Path file) throws IOException {
			try (InputStream stream = Files.newInputStream(file); DataInputStream in = new DataInputStream(stream)) {
				int size = in.readInt();
				int dimension = in.readInt();
				boolean cosine = in.readInt() == 1;
				List<String> ids = new ArrayList<>(size);
				for (int i = 0; i < size; i++) {
					byte[] utf8 = new byte[in.readInt()];
					in.readFully(utf8);
					ids.add(new String(utf8, StandardCharsets.UTF_8));
				}
				float[][] vectors = new float[size][dimension];
				for (float[] row : vectors) {
					for (int j = 0; j < dimension; j++) {
						row[j] = in.readFloat();
					}
				}
				return new Dataset(ids, vectors, dimension, cosine);
			}
		}

	}

}
