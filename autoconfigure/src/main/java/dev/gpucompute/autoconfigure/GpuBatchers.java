package dev.gpucompute.autoconfigure;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.SmartInitializingSingleton;

import dev.gpucompute.GpuContext;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;

/**
 * Creates the application's {@link GpuBatcher}s by name, with the settings of
 * {@code gpu.batching.<name>.*}: properties say how a batcher batches, code says what a batch does.
 *
 * <pre>{@code
 * @Service
 * class Embeddings {
 *     private final GpuBatcher<float[], float[]> batcher;
 *
 *     Embeddings(GpuBatchers batchers) {
 *         this.batcher = batchers.create("embed", (float[] input) -> input.length, this::embedBatch);
 *     }
 * }
 * }</pre>
 *
 * <p>A batcher runs on the primary device's context (the {@link GpuContext} bean), which closes it:
 * {@link GpuLifecycle} closes every batcher, letting queued items run, before the pools stop and
 * the devices drain, within {@code gpu.shutdown.drain-timeout}. A name without
 * {@code gpu.batching.<name>.*} gets the defaults (logged once). Configured names that no bean
 * created by the end of start-up are logged as a warning: a misspelt name would otherwise leave its
 * settings unused silently.
 *
 * <p>Thread-safe. The batchers belong to their context; the beans that create them may close them
 * earlier themselves.
 */
public final class GpuBatchers implements SmartInitializingSingleton, DisposableBean {

	private static final Log logger = LogFactory.getLog(GpuBatchers.class);

	private final GpuContext context;

	private final Map<String, GpuProperties.Batcher> settings;

	/** Names asked for through {@link #builder}, for the start-up check. */
	private final Set<String> requested = new TreeSet<>();

	/**
	 * @param context the context the batchers run on (not closed here)
	 * @param settings the settings by batcher name ({@code gpu.batching})
	 */
	public GpuBatchers(GpuContext context, Map<String, GpuProperties.Batcher> settings) {
		this.context = Objects.requireNonNull(context, "context");
		this.settings = Map.copyOf(settings);
	}

	/**
	 * A batcher whose items all share one batch key.
	 * @see #create(String, Function, BatchHandler)
	 */
	public <I, O> GpuBatcher<I, O> create(String name, BatchHandler<I, O> handler) {
		return create(name, (item) -> null, handler);
	}

	/**
	 * Builds and starts the batcher {@code name} with its configured settings.
	 * @param batchKey the batch key of an item: only items with equal keys share a batch
	 * @param handler runs one batch on its leased stream
	 * @throws IllegalStateException when a batcher of that name is open already
	 */
	public <I, O> GpuBatcher<I, O> create(String name, Function<? super I, ?> batchKey, BatchHandler<I, O> handler) {
		return builder(name, handler).batchKey(batchKey).build();
	}

	/**
	 * A builder with the configured settings of {@code name} applied, for what properties do not
	 * cover (its own acquire or drain timeout); the caller builds it.
	 */
	public <I, O> GpuBatcher.Builder<I, O> builder(String name, BatchHandler<I, O> handler) {
		GpuProperties.Batcher configured = this.settings.get(name);
		if (configured == null) {
			logger.info("No gpu.batching." + name + ".* settings: batcher '" + name + "' uses the defaults");
			configured = new GpuProperties.Batcher();
		}
		synchronized (this.requested) {
			this.requested.add(name);
		}
		return GpuBatcher.builder(this.context, handler).name(name).settings(GpuSettingsMapping.batcher(configured));
	}

	/** The configured settings by name ({@code gpu.batching}); unmodifiable. */
	public Map<String, GpuProperties.Batcher> settings() {
		return this.settings;
	}

	/** The open batchers of the context, whoever created them. */
	public List<GpuBatcher<?, ?>> batchers() {
		return GpuBatcher.openBatchers(this.context);
	}

	@Override
	public void afterSingletonsInstantiated() {
		Set<String> unused = new TreeSet<>(this.settings.keySet());
		synchronized (this.requested) {
			unused.removeAll(this.requested);
		}
		if (!unused.isEmpty()) {
			logger.warn("gpu.batching has settings for " + unused + ", but no batcher of "
					+ ((unused.size() == 1) ? "that name" : "those names") + " was created at start-up (GpuBatchers.create): "
					+ "check the names");
		}
	}

	/** Closes the context's batchers still open; {@link GpuLifecycle} normally did so already. */
	@Override
	public void destroy() {
		BatcherShutdown.closeWithin(batchers(), this.context.drainTimeout());
	}

}
