package dev.gpucompute;

import java.util.Collection;
import java.util.function.IntFunction;

/**
 * The implementation of this API, as the API finds it: {@code gpu-compute-runtime} provides one,
 * registered for {@link java.util.ServiceLoader} ({@code META-INF/services/dev.gpucompute.GpuRuntime}).
 * The API's entry points ({@link GpuContextBuilder#open()}, {@link GpuBatcher.Builder#build()},
 * {@link GpuDevices#open}, {@link LeakTracker#start()}) hand their settings to it, so that the API
 * package depends on no implementation class and the implementation depends on the API.
 *
 * <p>Not for applications: they use the entry points above. Implementations are thread-safe and
 * have a public no-argument constructor.
 */
public interface GpuRuntime {

	/** Opens a context on device {@code device} with {@code settings} (see {@link GpuContextBuilder#open()}). */
	GpuContext open(GpuContextBuilder.Settings settings, int device);

	/**
	 * Opens one context per ordinal, each with the settings {@code settingsFor} gives for it, in the
	 * order given (see {@link GpuDevices#open(GpuContextBuilder, Collection)}).
	 */
	GpuDevices openDevices(IntFunction<GpuContextBuilder.Settings> settingsFor, Collection<Integer> ordinals);

	/** How many devices {@code backend} has here (see {@link GpuDevices#deviceCount(Backend, int)}). */
	int deviceCount(Backend backend, int cpuDevices);

	/** Builds, registers and starts a batcher on {@code context} (see {@link GpuBatcher.Builder#build()}). */
	<I, O> GpuBatcher<I, O> openBatcher(GpuContext context, BatchHandler<I, O> handler, String name,
			java.util.function.Function<? super I, ?> keyOf, GpuBatcher.Settings settings);

	/** Starts recording acquisitions (see {@link LeakTracker#start()}). */
	LeakTracker startLeakTracker();

}
