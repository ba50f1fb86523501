package dev.gpucompute.autoconfigure;

import java.nio.file.Path;
import java.util.List;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.gpucompute.Backend;
import dev.gpucompute.BackendUnavailableException;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuListener;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.Backends;

/**
 * Opens the {@link GpuContext} bean from {@link GpuProperties}: chooses the backend and device
 * (telling a missing device apart from a missing backend), then applies the properties,
 * listeners and customizers to the builder.
 */
final class GpuContextFactory {

	private static final Log logger = LogFactory.getLog(GpuContextFactory.class);

	private final GpuProperties properties;

	private final GpuListener listener;

	private final List<GpuContextCustomizer> customizers;

	GpuContextFactory(GpuProperties properties, List<GpuListener> listeners, List<GpuContextCustomizer> customizers) {
		this.properties = properties;
		this.listener = CompositeGpuListener.of(listeners);
		this.customizers = customizers;
	}

	GpuContext open() {
		Backend requested = this.properties.getBackend().backend();
		int ordinal = this.properties.getDevice();
		GpuContext.Builder builder = GpuContext.builder()
			.backend(requested)
			.device(chooseOrdinal(requested, ordinal))
			.poolSize(this.properties.getStreams().getPoolSize())
			.maxSize(this.properties.getStreams().getMaxSize())
			.acquireTimeout(this.properties.getStreams().getAcquireTimeout())
			.defaultStream(this.properties.getStreams().getDefaultStream())
			.leakDetectionThreshold(this.properties.getStreams().getLeakDetectionThreshold())
			.drainTimeout(this.properties.getShutdown().getDrainTimeout())
			.compileOptions(this.properties.getKernels().getCompileOptions())
			.kernelCacheDir(cacheDir())
			.kernelTiming(this.properties.getMetrics().getKernelTiming())
			.listener(this.listener);
		Integer threads = this.properties.getCpu().getThreads();
		if (threads != null) {
			builder.cpuThreads(threads);
		}
		for (GpuContextCustomizer customizer : this.customizers) {
			customizer.customize(builder);
		}
		// The builder logs the one line saying which backend was chosen and why.
		GpuContext context = builder.open();
		if (requested == null && context.backend() == Backend.CPU) {
			// The starter leaves JCuda's natives to the application: say so when that is why CUDA is not used.
			String missing = JCudaNatives.missing(GpuContextFactory.class.getClassLoader());
			if (missing != null) {
				logger.info(missing + "; until then gpu.backend=auto uses the CPU backend");
			}
		}
		return context;
	}

	/**
	 * The ordinal to open. An ordinal beyond the devices of a backend that works here is a
	 * configuration error, also for {@code auto} (quietly running on the CPU of a GPU server would
	 * hide it); a machine without CUDA at all falls back to the CPU backend's only device.
	 */
	private int chooseOrdinal(Backend requested, int ordinal) {
		GpuContext.Selection selection = GpuContext.select(requested, ordinal);
		if (requested == null) {
			if (selection.backend() == Backend.CUDA) {
				return ordinal;
			}
			// auto falls back to the CPU: legitimate without CUDA, a configuration error when CUDA works
			checkOrdinal(Backends.provider(Backend.CUDA), Backend.CUDA, ordinal);
			if (ordinal != 0) {
				logger.info("gpu.device=" + ordinal + " does not apply to the CPU backend that auto falls back to; "
						+ "using its device 0");
			}
			return 0;
		}
		if (selection.provider() != null && selection.availability().available()) {
			return ordinal;
		}
		checkOrdinal(selection.provider(), requested, ordinal);
		throw new BackendUnavailableException(requested, selection.availability().reason(), null);
	}

	private static void checkOrdinal(BackendProvider provider, Backend backend, int ordinal) {
		if (provider == null || ordinal == 0 || !provider.probe(0).available()) {
			return;
		}
		int count = 1;
		while (count < ordinal && provider.probe(count).available()) {
			count++;
		}
		throw new DeviceOrdinalOutOfRangeException(backend, ordinal, count);
	}

	private Path cacheDir() {
		Path configured = this.properties.getKernels().getCacheDir();
		return (configured != null) ? configured : Path.of(System.getProperty("java.io.tmpdir"), "gpu-compute-kernels");
	}

}
