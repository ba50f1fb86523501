package dev.gpucompute.internal.context;

import java.util.Collection;
import java.util.function.IntFunction;

import dev.gpucompute.Backend;
import dev.gpucompute.BatchHandler;
import dev.gpucompute.GpuBatcher;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuDevices;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuRuntime;
import dev.gpucompute.LeakTracker;
import dev.gpucompute.internal.core.LeakRegistry;
import dev.gpucompute.spi.BackendProvider;
import dev.gpucompute.spi.BackendSelection;
import dev.gpucompute.spi.Backends;

/**
 * The runtime's {@link GpuRuntime}: what the API's entry points hand their settings to, registered
 * in {@code META-INF/services/dev.gpucompute.GpuRuntime}. Stateless and thread-safe.
 */
public final class Engine implements GpuRuntime {

	@Override
	public GpuContext open(GpuContextBuilder.Settings settings, int device) {
		return ContextImpl.open(settings, device, -1);
	}

	@Override
	public GpuDevices openDevices(IntFunction<GpuContextBuilder.Settings> settingsFor, Collection<Integer> ordinals) {
		return DevicesImpl.openEach(settingsFor, ordinals);
	}

	@Override
	public int deviceCount(Backend backend, int cpuDevices) {
		BackendSelection selection = Backends.select(backend, 0, cpuDevices);
		if (selection.backend() == Backend.CPU) {
			return cpuDevices;
		}
		BackendProvider cuda = Backends.provider(Backend.CUDA);
		return (cuda != null && selection.availability().available()) ? cuda.deviceCount() : 0;
	}

	@Override
	public <I, O> GpuBatcher<I, O> openBatcher(GpuContext context, BatchHandler<I, O> handler, String name,
			java.util.function.Function<? super I, ?> keyOf, GpuBatcher.Settings settings) {
		GpuContext owner = context;
		if (!(owner instanceof ContextImpl)) {
			// A proxy that forwards to a context of this runtime (Spring's @Lazy injection point, say)
			// reaches that context through its launcher.
			GpuLauncher launcher = context.launcher();
			owner = (launcher != null) ? launcher.context() : null;
		}
		if (owner instanceof ContextImpl impl) {
			return impl.openBatcher(handler, name, keyOf, settings);
		}
		throw new GpuException("Context " + context + " was not opened by the gpu-compute runtime");
	}

	@Override
	public LeakTracker startLeakTracker() {
		return LeakRegistry.start();
	}

}
