package dev.gpucompute.autoconfigure.metrics;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Supplier;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.GpuStream;
import dev.gpucompute.HostArray;
import dev.gpucompute.HostBuffer;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamScope;
import org.jspecify.annotations.Nullable;

/**
 * A {@link GpuLauncher} that wraps every launch in an {@link Observation}, so that tracing shows kernel
 * launches as spans inside the request that made them. Everything else is delegated unchanged.
 *
 * <p>The observation covers the enqueue on the calling thread (launches are asynchronous); its
 * outcome is {@code error} when the launch is rejected (bad arguments, no implementation for the
 * backend, closed context). Thread-safe like the launcher it wraps.
 */
public final class ObservedGpuLauncher implements GpuLauncher {

	private static final KernelLaunchObservationConvention DEFAULT_CONVENTION = new DefaultKernelLaunchObservationConvention();

	private final GpuLauncher delegate;

	private final ObservationRegistry registry;

	private final @Nullable KernelLaunchObservationConvention convention;

	/**
	 * Wraps {@code delegate}.
	 * @param delegate the launcher doing the work
	 * @param registry where observations go
	 * @param convention a custom convention, or {@code null} for the default
	 */
	public ObservedGpuLauncher(GpuLauncher delegate, ObservationRegistry registry,
			@Nullable KernelLaunchObservationConvention convention) {
		this.delegate = delegate;
		this.registry = registry;
		this.convention = convention;
	}

	/** The launcher this one delegates to. */
	public GpuLauncher getDelegate() {
		return this.delegate;
	}

	@Override
	public void launch(Kernel kernel, LaunchConfig config, Object... args) {
		observe(kernel.name(), null, () -> this.delegate.launch(kernel, config, args));
	}

	@Override
	public void launch(KernelSource source, LaunchConfig config, Object... args) {
		observe(source.name(), null, () -> this.delegate.launch(source, config, args));
	}

	@Override
	public void launch(GpuStream stream, Kernel kernel, LaunchConfig config, Object... args) {
		observe(kernel.name(), stream, () -> this.delegate.launch(stream, kernel, config, args));
	}

	private void observe(String kernelName, @Nullable GpuStream stream, Runnable launch) {
		KernelLaunchContext context = new KernelLaunchContext(kernelName, stream);
		Observation observation = Observation
			.createNotStarted(this.convention, DEFAULT_CONVENTION, () -> context, this.registry)
			.start();
		try (Observation.Scope scope = observation.openScope()) {
			launch.run();
			context.setEnqueued(true);
			if (stream == null) {
				context.setStream(this.delegate.currentStream());
			}
		}
		catch (RuntimeException | Error ex) {
			observation.error(ex);
			throw ex;
		}
		finally {
			observation.stop();
		}
	}

	// ---- delegated unchanged -------------------------------------------------------------

	@Override
	public GpuContext context() {
		return this.delegate.context();
	}

	@Override
	public Kernel load(KernelSource source) {
		return this.delegate.load(source);
	}

	@Override
	public Kernel kernel(String name) {
		return this.delegate.kernel(name);
	}

	@Override
	public Collection<Kernel> kernels() {
		return this.delegate.kernels();
	}

	@Override
	public GpuStream currentStream() {
		return this.delegate.currentStream();
	}

	@Override
	public void withStream(GpuStream stream, Runnable action) {
		this.delegate.withStream(stream, action);
	}

	@Override
	public <T> T callWithStream(GpuStream stream, Supplier<T> action) {
		return this.delegate.callWithStream(stream, action);
	}

	@Override
	public StreamScope useStream(GpuStream stream) {
		return this.delegate.useStream(stream);
	}

	@Override
	public void parallel(List<? extends Consumer<GpuStream>> branches) {
		this.delegate.parallel(branches);
	}

	@Override
	public void parallel(Runnable... branches) {
		this.delegate.parallel(branches);
	}

	@Override
	public CompletableFuture<Void> completion() {
		return this.delegate.completion();
	}

	@Override
	public HostBuffer allocateHost(long bytes) {
		return this.delegate.allocateHost(bytes);
	}

	@Override
	public DeviceBuffer allocate(long count, ElementType type) {
		return this.delegate.allocate(count, type);
	}

	@Override
	public DeviceBuffer upload(HostArray data) {
		return this.delegate.upload(data);
	}

	@Override
	public DeviceBuffer upload(HostBuffer data) {
		return this.delegate.upload(data);
	}

	@Override
	public String toString() {
		return "Observed" + this.delegate;
	}

}
