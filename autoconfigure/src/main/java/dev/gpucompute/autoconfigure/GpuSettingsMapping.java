package dev.gpucompute.autoconfigure;

import java.nio.file.Path;

import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.settings.CopySettings;
import dev.gpucompute.settings.CpuSettings;
import dev.gpucompute.settings.GraphSettings;
import dev.gpucompute.settings.KernelSettings;
import dev.gpucompute.settings.MetricsSettings;
import dev.gpucompute.settings.ShutdownSettings;
import dev.gpucompute.settings.StreamSettings;

/**
 * Maps the groups of {@link GpuProperties} onto the runtime's settings records, which hold the
 * defaults and limits: what a property leaves unset comes from the record's {@code DEFAULTS}, so a
 * default is written once, in the runtime. The values were checked when they were bound
 * ({@link GpuPropertiesValidator}). Stateless.
 */
final class GpuSettingsMapping {

	/**
	 * Where compiled kernels are cached when {@code gpu.kernels.cache-dir} is not set: unlike the
	 * runtime (no disk cache unless asked), a service restarts often and should not compile again.
	 */
	static final Path DEFAULT_KERNEL_CACHE = Path.of(System.getProperty("java.io.tmpdir"), "gpu-compute-kernels");

	private GpuSettingsMapping() {
	}

	/** {@code gpu.streams.*} (the priority limits apart: they go to the builder by priority). */
	static StreamSettings streams(GpuProperties.Streams streams) {
		return new StreamSettings(streams.getPoolSize(), streams.getMaxSize(), streams.getAcquireTimeout(),
				streams.getDefaultStream(), streams.getLeakDetectionThreshold());
	}

	/** {@code gpu.copies.*}; chunks, cache and copy threads are the runtime's (a customizer may change them). */
	static CopySettings copies(GpuProperties.Copies copies) {
		return CopySettings.DEFAULTS.withStagingBudget(copies.getStagingBudget().toBytes())
			.withStagingTimeout(copies.getStagingTimeout());
	}

	/** {@code gpu.cpu.*}; threads unset: the runtime's default. */
	static CpuSettings cpu(GpuProperties.Cpu cpu) {
		CpuSettings settings = CpuSettings.DEFAULTS.withDevices(cpu.getDevices());
		return (cpu.getThreads() != null) ? settings.withThreads(cpu.getThreads()) : settings;
	}

	/** {@code gpu.kernels.*} (the locations apart: the starter loads those files itself). */
	static KernelSettings kernels(GpuProperties.Kernels kernels) {
		Path cacheDir = (kernels.getCacheDir() != null) ? kernels.getCacheDir() : DEFAULT_KERNEL_CACHE;
		return KernelSettings.DEFAULTS.withCompileOptions(kernels.getCompileOptions()).withCacheDir(cacheDir);
	}

	/** {@code gpu.shutdown.*}. */
	static ShutdownSettings shutdown(GpuProperties.Shutdown shutdown) {
		return new ShutdownSettings(shutdown.getDrainTimeout());
	}

	/** {@code gpu.metrics.*} (observe-launches apart: the starter's own); utilisation sampling is the runtime's. */
	static GraphSettings graphs(GpuGraphProperties graphs) {
		return new GraphSettings(graphs.getCacheSize());
	}

	static MetricsSettings metrics(GpuProperties.Metrics metrics) {
		return MetricsSettings.DEFAULTS.withKernelTiming(metrics.getKernelTiming());
	}

	/** {@code gpu.batching.<name>.*}. */
	static GpuBatcher.Settings batcher(GpuProperties.Batcher batcher) {
		return GpuBatcher.Settings.DEFAULTS.withMaxBatchSize(batcher.getMaxBatchSize())
			.withMaxQueueDelay(batcher.getMaxQueueDelay())
			.withMaxQueued(batcher.getMaxQueued())
			.withPriority(batcher.getPriority())
			.withTimeout(batcher.getTimeout())
			.withMaxConcurrentBatches(batcher.getMaxConcurrentBatches());
	}

}
