package dev.gpucompute.sample;

import java.util.ArrayList;
import java.util.List;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.autoconfigure.GpuBatchers;
import dev.gpucompute.autoconfigure.GpuLifecycle;
import dev.gpucompute.autoconfigure.kernels.GpuKernels;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.sample.search.BatchedSearches;
import dev.gpucompute.sample.search.CollectionStore;
import dev.gpucompute.sample.search.DeviceMemoryBudget;
import dev.gpucompute.sample.search.Hit;
import dev.gpucompute.sample.search.KnnEngine;
import dev.gpucompute.sample.search.CpuScoring;
import dev.gpucompute.sample.search.KnnKernels;
import dev.gpucompute.sample.search.SearchDevice;
import dev.gpucompute.sample.storage.CollectionFiles;

/**
 * Wires the search service onto the starter's beans. The kernels are {@link KernelSource} beans
 * carrying the parameter types and CPU implementations; the starter pairs each with the file of the
 * same name under {@code gpu.kernels.locations} (the CUDA code) and loads it at start-up, so a
 * kernel that does not compile fails start-up, not the first search.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(SampleProperties.class)
class SearchConfiguration {

	private static final Logger log = LoggerFactory.getLogger(SearchConfiguration.class);

	@Bean
	static KernelSource knnScore() {
		return KnnKernels.SCORE;
	}

	@Bean
	static KernelSource knnTopk() {
		return KnnKernels.TOPK;
	}

	@Bean
	static KernelSource knnSortInit() {
		return KnnKernels.SORT_INIT;
	}

	@Bean
	static KernelSource knnBitonicStep() {
		return KnnKernels.BITONIC_STEP;
	}

	@Bean
	static KernelSource knnScatter() {
		return KnnKernels.SCATTER;
	}

	@Bean
	static KernelSource knnFused() {
		return KnnKernels.FUSED;
	}

	@Bean
	static KernelSource knnMerge() {
		return KnnKernels.MERGE;
	}

	/**
	 * One {@link SearchDevice} per device of {@code gpu.devices} (one by default), in ordinal order:
	 * each with an engine on that device's launcher and pool and its own {@code sample.memory-budget}.
	 */
	static List<SearchDevice> searchDevices(GpuDevices devices, SampleProperties properties) {
		SampleProperties.Search search = properties.getSearch();
		if (devices.primary().backend() == Backend.CPU) {
			// One line saying whether the CPU twins score with SIMD, and how to enable it if not.
			log.info(CpuScoring.scoringPath());
		}
		List<SearchDevice> result = new ArrayList<>();
		for (GpuContext context : devices.contexts()) {
			GpuLauncher launcher = context.launcher();
			// Every start-up kernel is loaded on every device; they are looked up by name.
			KnnEngine engine = new KnnEngine(launcher, context.streams(), (source) -> launcher.kernel(source.name()),
					search.getParallelism(), search.getMinQueriesPerGroup(), search.getScratch().toBytes(),
					search.getTimeout());
			result.add(new SearchDevice(context.device().ordinal(), engine,
					new DeviceMemoryBudget(properties.getMemoryBudget().toBytes())));
		}
		return result;
	}

	/**
	 * Folds every write-ahead log into its snapshot when the application stops: after the web
	 * server finished its requests and before the GPU drains (the snapshot is read from device
	 * storage through the stream pool, which closes in {@link GpuLifecycle#PHASE}). The store's own
	 * close (destroy) then finds the logs empty. Were it skipped, nothing would be lost: the logs
	 * hold every write and are replayed at the next start.
	 */
	@Bean
	SmartLifecycle collectionStoreLifecycle(CollectionStore store) {
		return new SmartLifecycle() {

			private volatile boolean running;

			@Override
			public void start() {
				this.running = true;
			}

			@Override
			public void stop() {
				this.running = false;
				store.flushAll();
			}

			@Override
			public boolean isRunning() {
				return this.running;
			}

			@Override
			public int getPhase() {
				return GpuLifecycle.PHASE + 1;
			}

		};
	}

	/** The files of {@code sample.data-dir}; a bean so that tests can substitute one that fails on demand. */
	@Bean
	CollectionFiles collectionFiles(SampleProperties properties) {
		return new CollectionFiles(properties.getDataDir());
	}

	/**
	 * Searches, with small requests joined into batches by the starter's batcher 'search'
	 * ({@code gpu.batching.search.*}), unless {@code sample.search.batching.enabled=false}. Closed before
	 * the store; at shutdown the starter has closed the batcher already, its queued searches answered.
	 */
	@Bean(destroyMethod = "close")
	BatchedSearches batchedSearches(CollectionStore store, GpuBatchers batchers, SampleProperties properties) {
		SampleProperties.Search.Batching batching = properties.getSearch().getBatching();
		CollectionStore.Limits limits = limits(properties);
		GpuBatcher<BatchedSearches.Request, List<List<Hit>>> batcher = batching.isEnabled()
				? batchers.create("search", BatchedSearches::batchKey, BatchedSearches.handler(store, limits)) : null;
		return new BatchedSearches(store, batcher, batching.getMaxRequestQueries(), limits);
	}

	private static CollectionStore.Limits limits(SampleProperties properties) {
		SampleProperties.Limits limits = properties.getLimits();
		return new CollectionStore.Limits(limits.getMaxDimension(), limits.getMaxQueries(), limits.getMaxIdLength(),
				limits.getMaxResults());
	}

	@Bean(destroyMethod = "close")
	CollectionStore collectionStore(GpuDevices devices, GpuKernels kernels, CollectionFiles files,
			SampleProperties properties) {
		// GpuKernels: the start-up kernels are loaded on every device before an engine looks them up.
		SampleProperties.Storage storage = properties.getStorage();
		CollectionStore store = new CollectionStore(searchDevices(devices, properties), files, limits(properties),
				new CollectionStore.Durability(storage.isSync(), storage.getLogFoldSize().toBytes(),
						storage.getRetryAfter()));
		store.start();
		return store;
	}

}
