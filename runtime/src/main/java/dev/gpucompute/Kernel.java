package dev.gpucompute;

import java.time.Duration;
import java.util.List;

import dev.gpucompute.settings.KernelTiming;

/**
 * A kernel loaded into a {@link GpuContext}, ready to launch through {@link GpuLauncher}. Obtained
 * from {@link GpuLauncher#load(KernelSource)} or {@link GpuLauncher#kernel(String)}; owned by the
 * context (unloaded when it closes), so there is nothing to close. Thread-safe.
 */
public interface Kernel {

	/** The kernel's name, as its source gives it. */
	String name();

	/** The source it was loaded from. */
	KernelSource source();

	/** Its parameter types, in order: what launches are checked against. */
	List<ParamType> params();

	/** Launch, error and device-time counts since the kernel was loaded. */
	KernelStats stats();


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
