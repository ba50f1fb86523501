package dev.gpucompute;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

import dev.gpucompute.spi.NativeKernel;

/**
 * A kernel loaded into a {@link GpuContext}, ready to launch through {@link GpuLauncher}. Obtained
 * from {@link GpuLauncher#load(KernelSource)} or {@link GpuLauncher#kernel(String)}; owned by the
 * context (unloaded when it closes), so there is nothing to close. Thread-safe.
 */
public final class Kernel {

	private final GpuContext context;

	private final KernelSource source;

	private final NativeKernel handle;

	final LongAdder launches = new LongAdder();

	final LongAdder errors = new LongAdder();

	final LongAdder timedLaunches = new LongAdder();

	final LongAdder timedNanos = new LongAdder();

	/** Sampling counter for {@link KernelTiming#SAMPLED}; racy increments only make sampling uneven. */
	int sampleCounter;

	Kernel(GpuContext context, KernelSource source, NativeKernel handle) {
		this.context = context;
		this.source = source;
		this.handle = handle;
	}

	public String name() {
		return this.source.name();
	}

	public KernelSource source() {
		return this.source;
	}

	public List<ParamType> params() {
		return this.source.params();
	}

	/** Launch, error and device-time counts since the kernel was loaded. */
	public KernelStats stats() {
		return new KernelStats(name(), this.launches.sum(), this.errors.sum(), this.timedLaunches.sum(),
				Duration.ofNanos(this.timedNanos.sum()));
	}

	GpuContext context() {
		return this.context;
	}

	NativeKernel handle() {
		return this.handle;
	}

	@Override
	public String toString() {
		return "Kernel[" + name() + this.source.params() + "]";
	}

	/**
	 * Launch figures of one kernel.
	 *
	 * @param name the kernel's name
	 * @param launches launches enqueued
	 * @param errors launches rejected by the backend plus failures found at synchronisation
	 * @param timedLaunches launches whose device time was measured ({@link KernelTiming})
	 * @param deviceTime total device time of the timed launches
	 */
	public record KernelStats(String name, long launches, long errors, long timedLaunches, Duration deviceTime) {

		/** Mean device time of a timed launch, or zero when none was timed. */
		public Duration meanDeviceTime() {
			return (this.timedLaunches == 0) ? Duration.ZERO : this.deviceTime.dividedBy(this.timedLaunches);
		}

	}

}
