package dev.gpucompute.sample.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.SmartLifecycle;

import dev.gpucompute.sample.SampleProperties;
import dev.gpucompute.sample.search.CollectionInfo;
import dev.gpucompute.sample.search.CollectionStore;
import dev.gpucompute.sample.search.Metric;
import dev.gpucompute.sample.search.ServiceProblem;

/**
 * A steady mix of searches, so that {@code /actuator/gpu}, the {@code gpu.*} meters and the Grafana
 * dashboard show real activity: a few client threads search the demo collection with batches of 1
 * to {@code max-batch} queries and k from 1 to {@code max-k}, pausing {@code interval} between
 * searches. The collection (clustered random vectors, so that searches have meaningful neighbours)
 * is created and filled at start if it is missing or empty.
 *
 * <p>Runs in the default lifecycle phase, above the web server's and the GPU's, so it stops first
 * at shutdown and the GPU drains with no demo search left in flight.
 */
public final class DemoLoad implements SmartLifecycle {

	private static final Logger log = LoggerFactory.getLogger(DemoLoad.class);

	private static final int CLUSTERS = 32;

	private final CollectionStore store;

	private final SampleProperties.DemoLoad settings;

	private final @Nullable Counter searches;

	private final @Nullable Counter failures;

	private volatile @Nullable ExecutorService clients;

	@SuppressWarnings("NullAway.Init") // set by start() before the clients that read it are started
	private volatile float[][] centres;

	public DemoLoad(CollectionStore store, SampleProperties properties, ObjectProvider<MeterRegistry> registry) {
		this.store = store;
		this.settings = properties.getDemoLoad();
		MeterRegistry meters = registry.getIfAvailable();
		this.searches = (meters != null) ? Counter.builder("sample.demo.searches")
			.description("Searches issued by the demo load")
			.tag("outcome", "success")
			.register(meters) : null;
		this.failures = (meters != null) ? Counter.builder("sample.demo.searches")
			.description("Searches issued by the demo load")
			.tag("outcome", "error")
			.register(meters) : null;
	}

	@Override
	public void start() {
		String name = this.settings.getCollection();
		int dimension = this.settings.getDimension();
		Random random = new Random(42);
		this.centres = new float[CLUSTERS][dimension];
		for (float[] centre : this.centres) {
			for (int j = 0; j < dimension; j++) {
				centre[j] = (float) random.nextGaussian();
			}
		}
		CollectionInfo info = this.store.create(name, dimension, Metric.COSINE).info();
		if (info.size() == 0) {
			fill(name, dimension, random);
		}
		int clientCount = Math.max(1, this.settings.getClients());
		AtomicInteger number = new AtomicInteger();
		this.clients = Executors.newFixedThreadPool(clientCount, (runnable) -> {
			Thread thread = new Thread(runnable, "demo-load-" + number.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		});
		for (int c = 0; c < clientCount; c++) {
			long seed = c;
			this.clients.execute(() -> run(new Random(seed)));
		}
		log.info("Demo load started: {} clients searching collection '{}' every {}", clientCount, name,
				this.settings.getInterval());
	}

	private void fill(String name, int dimension, Random random) {
		int size = this.settings.getSize();
		int batch = 1000;
		for (int first = 0; first < size; first += batch) {
			int count = Math.min(batch, size - first);
			List<String> ids = new ArrayList<>(count);
			float[] rows = new float[count * dimension];
			for (int i = 0; i < count; i++) {
				ids.add("demo-" + (first + i));
				float[] centre = this.centres[random.nextInt(CLUSTERS)];
				for (int j = 0; j < dimension; j++) {
					rows[i * dimension + j] = centre[j] + 0.3f * (float) random.nextGaussian();
				}
			}
			this.store.upsert(name, ids, rows);
		}
		log.info("Filled demo collection '{}' with {} vectors of dimension {}", name, size, dimension);
	}

	private void run(Random random) {
		String name = this.settings.getCollection();
		int dimension = this.settings.getDimension();
		while (this.clients != null && !Thread.currentThread().isInterrupted()) {
			int batch = 1 + random.nextInt(Math.max(1, this.settings.getMaxBatch()));
			float[] queries = new float[batch * dimension];
			for (int q = 0; q < batch; q++) {
				float[] centre = this.centres[random.nextInt(CLUSTERS)];
				for (int j = 0; j < dimension; j++) {
					queries[q * dimension + j] = centre[j] + 0.3f * (float) random.nextGaussian();
				}
			}
			try {
				int size = this.store.get(name).size();
				int k = 1 + random.nextInt(Math.max(1, Math.min(this.settings.getMaxK(), size)));
				this.store.search(name, queries, k);
				increment(this.searches);
			}
			catch (ServiceProblem ex) {
				// The collection was deleted or changed under the demo; try again after the pause.
				increment(this.failures);
			}
			catch (RuntimeException ex) {
				increment(this.failures);
				log.warn("Demo search failed: {}", ex.toString());
			}
			try {
				Thread.sleep(this.settings.getInterval().toMillis());
			}
			catch (InterruptedException ex) {
				return;
			}
		}
	}

	private static void increment(@Nullable Counter counter) {
		if (counter != null) {
			counter.increment();
		}
	}

	@Override
	public void stop() {
		ExecutorService running = this.clients;
		this.clients = null;
		if (running != null) {
			running.shutdownNow();
			try {
				running.awaitTermination(30, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	@Override
	public boolean isRunning() {
		return this.clients != null;
	}

}
