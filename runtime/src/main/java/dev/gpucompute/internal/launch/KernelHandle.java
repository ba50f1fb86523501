package dev.gpucompute.internal.launch;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

import dev.gpucompute.GpuException;
import dev.gpucompute.Kernel;
import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;
import dev.gpucompute.internal.core.ContextState;
import dev.gpucompute.spi.NativeKernel;

/** The implementation of {@link Kernel}. */
final class KernelHandle implements Kernel {

	private final ContextState lifecycle;

	private final KernelSource source;

	private final NativeKernel handle;

	final LongAdder launches = new LongAdder();

	final LongAdder errors = new LongAdder();

	final LongAdder timedLaunches = new LongAdder();

	final LongAdder timedNanos = new LongAdder();

	/** Sampling counter for {@link dev.gpucompute.settings.KernelTiming#SAMPLED}; racy increments only make sampling uneven. */
	int sampleCounter;

	KernelHandle(ContextState lifecycle, KernelSource source, NativeKernel handle) {
		this.lifecycle = lifecycle;
		this.source = source;
		this.handle = handle;
	}

	@Override
	public String name() {
		return this.source.name();
	}

	@Override
	public KernelSource source() {
		return this.source;
	}

	@Override
	public List<ParamType> params() {
		return this.source.params();
	}

	@Override
	public KernelStats stats() {
		return new KernelStats(name(), this.launches.sum(), this.errors.sum(), this.timedLaunches.sum(),
				Duration.ofNanos(this.timedNanos.sum()));
	}

	ContextState lifecycle() {
		return this.lifecycle;
	}

	/**
	 * The runtime's kernel behind {@code kernel}.
	 * @throws GpuException when it is not one of the runtime's kernels
	 */
	static KernelHandle of(Kernel kernel) {
		if (kernel instanceof KernelHandle handle) {
			return handle;
		}
		throw new GpuException("Kernel " + kernel + " was not loaded by the gpu-compute runtime");
	}

	NativeKernel handle() {
		return this.handle;
	}

	@Override
	public String toString() {
		return "Kernel[" + name() + this.source.params() + "]";
	}

}
