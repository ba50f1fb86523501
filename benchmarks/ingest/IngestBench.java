import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Binary ingest into a running sample service: {@code vectors} random vectors of {@code dimension},
 * {@code batch} per request, from {@code clients} concurrent clients; prints vectors/s and the
 * service's RSS (VmRSS, VmHWM from /proc/<pid>/status when a pid is given).
 *
 * <p>A collection name starting with {@code warm} first ingests the same into a throw-away
 * collection (deleted after), so the figure is the JIT-compiled steady state.
 *
 * <p>Run: {@code java benchmarks/ingest/IngestBench.java http://localhost:8080 <collection> <vectors>
 * <dimension> <batch> <clients> [pid]} (the collection is created, cosine; it must not exist).
 */
public class IngestBench {

	public static void main(String[] args) throws Exception {
		String base = args[0];
		String name = args[1];
		int vectors = Integer.parseInt(args[2]);
		int dim = Integer.parseInt(args[3]);
		int batch = Integer.parseInt(args[4]);
		int clients = Integer.parseInt(args[5]);
		String pid = (args.length > 6) ? args[6] : null;
		HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
		if (name.startsWith("warm")) {
			// A first run of the same shape into a throw-away collection: the JIT has compiled the path.
			run(http, base, name + "-warmup", vectors, dim, batch, clients, null);
			http.send(HttpRequest.newBuilder(URI.create(base + "/collections/" + name + "-warmup")).DELETE().build(),
					HttpResponse.BodyHandlers.ofString());
		}
		run(http, base, name, vectors, dim, batch, clients, pid);
	}

	static void run(HttpClient http, String base, String name, int vectors, int dim, int batch, int clients,
			String pid) throws Exception {
		HttpResponse<String> created = http.send(HttpRequest.newBuilder(URI.create(base + "/collections/" + name))
			.header("Content-Type", "application/json")
			.PUT(HttpRequest.BodyPublishers.ofString("{\"dimension\":" + dim + ",\"metric\":\"cosine\"}"))
			.build(), HttpResponse.BodyHandlers.ofString());
		if (created.statusCode() != 201) {
			throw new IllegalStateException("create: " + created.statusCode() + " " + created.body());
		}
		int requests = (vectors + batch - 1) / batch;
		// Bodies are prepared before timing: the client's own cost stays out of the figure.
		List<byte[]> bodies = new ArrayList<>(requests);
		Random random = new Random(42);
		for (int r = 0; r < requests; r++) {
			int rows = Math.min(batch, vectors - r * batch);
			ByteBuffer body = ByteBuffer.allocate(rows * dim * 4).order(ByteOrder.LITTLE_ENDIAN);
			for (int i = 0; i < rows * dim; i++) {
				body.putFloat((float) random.nextGaussian());
			}
			bodies.add(body.array());
		}
		AtomicLong next = new AtomicLong();
		ExecutorService pool = Executors.newFixedThreadPool(clients);
		long start = System.nanoTime();
		List<Future<?>> futures = new ArrayList<>();
		for (int c = 0; c < clients; c++) {
			futures.add(pool.submit(() -> {
				for (int r; (r = (int) next.getAndIncrement()) < requests;) {
					HttpResponse<String> response = http.send(HttpRequest
						.newBuilder(URI.create(base + "/collections/" + name + "/vectors?idPrefix=v&idStart=" + ((long) r * batch)))
						.header("Content-Type", "application/octet-stream")
						.POST(HttpRequest.BodyPublishers.ofByteArray(bodies.get(r)))
						.build(), HttpResponse.BodyHandlers.ofString());
					if (response.statusCode() != 200) {
						throw new IllegalStateException(response.statusCode() + " " + response.body());
					}
				}
				return null;
			}));
		}
		for (Future<?> future : futures) {
			future.get();
		}
		double seconds = (System.nanoTime() - start) / 1e9;
		pool.shutdown();
		String rss = "";
		if (pid != null) {
			for (String line : Files.readAllLines(Path.of("/proc", pid, "status"))) {
				if (line.startsWith("VmRSS") || line.startsWith("VmHWM")) {
					rss += " " + line.replaceAll("\\s+", " ");
				}
			}
		}
		System.out.printf("%s: %d x %d, batch %d, %d clients: %.2f s, %.0f vectors/s, %.1f requests/s;%s%n", name,
				vectors, dim, batch, clients, seconds, vectors / seconds, requests / seconds, rss);
	}

}
