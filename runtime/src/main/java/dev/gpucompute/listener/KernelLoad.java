package dev.gpucompute.listener;

import java.time.Duration;

/**
 * One kernel loaded into a context, as {@link GpuListener#kernelLoaded} reports it: what loaded it,
 * how long that took, and whether it waited for work in flight.
 *
 * <p>Why it matters: on CUDA, loading a module ({@code cuModuleLoadDataEx}) does not return before
 * the work in flight on the device is done. Measured on an H200, a load issued while a 1 s kernel ran
 * on another stream returned 1,001.8 ms later, when that kernel ended, and took 0.2 ms with the
 * device idle. A kernel loaded (or compiled) while a service runs therefore stalls its caller behind
 * every other request's GPU work. Load every kernel before work starts:
 * {@link dev.gpucompute.GpuContextBuilder#kernels} (when the context opens), {@link dev.gpucompute.GpuLauncher#load} at start-up, or,
 * with the Spring starter, a {@code KernelSource} bean or a file under {@code gpu.kernels.locations}.
 * Only {@link dev.gpucompute.GpuLauncher#launch(dev.gpucompute.KernelSource, dev.gpucompute.LaunchConfig, Object...)} loads on a launch path
 * ({@link Trigger#LAUNCH}), and the context logs it.
 *
 * @param kernel the kernel's name
 * @param trigger what loaded it
 * @param time the whole load, on the calling thread: compiling (CUDA C), the disk cache and the backend's
 * load step
 * @param deviceTime the backend's load step alone ({@link dev.gpucompute.spi.NativeKernel#loadNanos()}):
 * on CUDA the driver's module loads, which include the driver's JIT compilation of PTX and the wait for
 * the device
 * @param workInFlight whether this context had work in flight when the load began: a pooled stream
 * not idle, the calling thread's current stream not idle, or a future of stream work not complete
 * @param waited whether the load counts as having waited for that work: work was in flight and the
 * load step took at least {@link dev.gpucompute.GpuContextBuilder#kernelLoadWaitThreshold(Duration) the threshold}.
 * The context logs such a load at WARN.
 */
public record KernelLoad(String kernel, Trigger trigger, Duration time, Duration deviceTime, boolean workInFlight,
		boolean waited) {

	/** What loaded a kernel. */
	public enum Trigger {

		/** Named on {@link dev.gpucompute.GpuContextBuilder#kernels} and loaded while the context opened. */
		OPEN,

		/** {@link dev.gpucompute.GpuLauncher#load}. */
		LOAD,

		/**
		 * The first {@link dev.gpucompute.GpuLauncher#launch(dev.gpucompute.KernelSource, dev.gpucompute.LaunchConfig, Object...)} of a kernel not
		 * loaded yet: the one launch that loads, logged once per kernel (INFO, or WARN when it waited).
		 */
		LAUNCH

	}

}
