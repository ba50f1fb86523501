package dev.gpucompute.internal.context;

import java.util.Collection;
import java.util.function.Function;
import java.util.function.IntFunction;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.batch.BatchHandler;
import dev.gpucompute.batch.GpuBatcher;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

/**
 * The runtime's entry points, which the API's static methods reach by name ({@code GpuContext.builder().open()},
 * {@code GpuDevices.open(...)}, {@code LeakTracker.start()}, {@code GpuBatcher.Builder.build()}): each
 * a public static method whose name and signature the API looks up, so rename none without the API.
 * Stateless and thread-safe.
 */
public final class Engine {

	private Engine() {
	}

	/** Opens a context on {@code device} with {@code settings}. */
	public static GpuContext open(GpuContextBuilder.Settings settings, int device) {
		return ContextAssembly.open(settings, device);
	}

	/** Opens one context per ordinal, each with the settings {@code settingsFor} gives for it, in the order given. */
	public static GpuDevices openDevices(IntFunction<GpuContextBuilder.Settings> settingsFor,
			Collection<Integer> ordinals) {
		return DevicesImpl.openEach(settingsFor, ordinals);
	}

	/** How many devices {@code backend} has here ({@code null}: what auto chooses). */
	public static int deviceCount(Backend backend, int cpuDevices) {
		BackendSelection selection = Backends.select(backend, 0, cpuDevices);
		if (selection.backend() == Backend.CPU) {
			return cpuDevices;
		}
		BackendProvider cuda = Backends.provider(Backend.CUDA);
		return (cuda != null && selection.availability().available()) ? cuda.deviceCount() : 0;
	}

	/** Builds, registers and starts a batcher on {@code context}. */
	public static GpuBatcher<?, ?> openBatcher(GpuContext context, BatchHandler<?, ?> handler, String name,
			Function<?, ?> keyOf, GpuBatcher.Settings settings) {
		return openTyped(context, handler, name, keyOf, settings);
	}

	@SuppressWarnings("unchecked")
	private static <I, O> GpuBatcher<I, O> openTyped(GpuContext context, BatchHandler<?, ?> handler, String name,
			Function<?, ?> keyOf, GpuBatcher.Settings settings) {
		return owner(context).openBatcher((BatchHandler<I, O>) handler, name, (Function<? super I, ?>) keyOf, settings);
	}

	/** The open batchers of {@code context}, in the order they were built; a snapshot. */
	public static java.util.List<GpuBatcher<?, ?>> openBatchers(GpuContext context) {
		return owner(context).batchers();
	}

	/** Starts recording acquisitions. */
	public static LeakTracker startLeakTracker() {
		return LeakRegistry.start();
	}

	/**
	 * The runtime's own context behind {@code context}: itself, or the context a proxy forwards to
	 * (Spring's {@code @Lazy} injection point, say), reached through its launcher.
	 */
	static ContextImpl owner(GpuContext context) {
		GpuContext owner = context;
		if (!(owner instanceof ContextImpl)) {
			GpuLauncher launcher = context.launcher();
			owner = (launcher != null) ? launcher.context() : null;
		}
		if (owner instanceof ContextImpl impl) {
			return impl;
		}
		throw new GpuException("Context " + context + " was not opened by the gpu-compute runtime");
	}

}
