package dev.gpucompute.sample;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.KernelSource;
import dev.gpucompute.StreamPool;
import dev.gpucompute.sample.search.CollectionStore;
import dev.gpucompute.sample.search.DeviceMemoryBudget;
import dev.gpucompute.sample.search.KnnEngine;
import dev.gpucompute.sample.search.KnnKernels;
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
	KnnEngine knnEngine(GpuContext context, GpuLauncher launcher, StreamPool pool, SampleProperties properties) {
		SampleProperties.Search search = properties.getSearch();
		if (context.backend() == Backend.CPU) {
			// One line saying whether the CPU twins score with SIMD, and how to enable it if not.
			log.info(KnnKernels.scoringPath());
		}
		// The launcher bean comes with every start-up kernel loaded; they are looked up by name.
		return new KnnEngine(launcher, pool, (source) -> launcher.kernel(source.name()),
				search.getParallelism(), search.getMinQueriesPerGroup(), search.getScratch().toBytes(),
				search.getTimeout());
	}

	@Bean(destroyMethod = "close")
	CollectionStore collectionStore(KnnEngine engine, SampleProperties properties) {
		SampleProperties.Limits limits = properties.getLimits();
		CollectionStore store = new CollectionStore(engine, new CollectionFiles(properties.getDataDir()),
				new DeviceMemoryBudget(properties.getMemoryBudget().toBytes()),
				new CollectionStore.Limits(limits.getMaxDimension(), limits.getMaxQueries(), limits.getMaxIdLength(),
						limits.getMaxResults()),
				properties.getStorage().getFlushInterval());
		store.start();
		return store;
	}

}
