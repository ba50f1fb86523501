package dev.gpucompute.sample.search;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuListener;
import dev.gpucompute.KernelSource;
import dev.gpucompute.sample.storage.CollectionFiles;

/**
 * A {@link CollectionStore} on the CPU backend without Spring, for the crash tests (also run in a
 * child JVM by {@link CrashChild}). Closing it closes the store, then the context.
 */
final class StoreFixture implements AutoCloseable {

	final GpuContext context;

	final CollectionStore store;

	StoreFixture(Path dataDir, CollectionStore.Durability durability) {
		this(dataDir, durability, GpuListener.NONE);
	}

	/** With {@code listener} told of the context's launches, leases and batches. */
	StoreFixture(Path dataDir, CollectionStore.Durability durability, GpuListener listener) {
		this.context = GpuContext.builder()
			.backend(Backend.CPU)
			.poolSize(4)
			.maxSize(32)
			.cpuThreads(2)
			.listener(listener)
			.open();
		try {
			KnnEngine engine = engine(this.context, 2, 2, 64L << 20, Duration.ofSeconds(60));
			this.store = new CollectionStore(engine, new CollectionFiles(dataDir), new DeviceMemoryBudget(256L << 20),
					new CollectionStore.Limits(4096, 1024, 256, 1_000_000), durability);
			this.store.start();
		}
		catch (RuntimeException ex) {
			this.context.close();
			throw ex;
		}
	}

	/** An engine on {@code context} with the service's kernels, their CUDA code from the class path. */
	static KnnEngine engine(GpuContext context, int parallelism, int minQueriesPerGroup, long scratchBytes,
			Duration deviceTimeout) {
		GpuLauncher launcher = context.launcher();
		Map<String, KernelSource> sources = new HashMap<>();
		KnnKernels.withCudaFromClasspath().forEach((source) -> sources.put(source.name(), source));
		return new KnnEngine(launcher, context.streams(), (source) -> launcher.load(sources.get(source.name())),
				parallelism, minQueriesPerGroup, scratchBytes, deviceTimeout);
	}

	/** Three CPU devices standing in for GPUs ({@code gpu.cpu.devices=3}), one worker thread each. */
	static GpuDevices threeCpuDevices() {
		return GpuDevices.open(
				GpuContext.builder().backend(Backend.CPU).cpuDevices(3).cpuThreads(1).poolSize(2).maxSize(8),
				List.of(0, 1, 2));
	}

	/** One {@link SearchDevice} per device, each with an engine like {@link #engine}'s and {@code budget} bytes. */
	static List<SearchDevice> searchDevices(GpuDevices devices, long budget) {
		List<SearchDevice> searchDevices = new ArrayList<>();
		for (GpuContext context : devices.contexts()) {
			searchDevices.add(new SearchDevice(context.device().ordinal(),
					engine(context, 2, 2, 16L << 20, Duration.ofSeconds(60)), new DeviceMemoryBudget(budget)));
		}
		return searchDevices;
	}

	@Override
	public void close() {
		try {
			this.store.close();
		}
		finally {
			this.context.close();
		}
	}

	/** The vector every test derives from an id, so the parent can check what the child wrote. */
	static float[] vectorOf(String id, int dimension) {
		java.util.Random random = new java.util.Random(id.hashCode() * 0x9E3779B97F4A7C15L);
		float[] vector = new float[dimension];
		for (int j = 0; j < dimension; j++) {
			vector[j] = (float) random.nextGaussian();
		}
		return vector;
	}

}
