package dev.gpucompute.spi;

/** A loaded kernel, ready to launch. Unloaded when its backend closes. */
public interface NativeKernel {

	String name();

	/**
	 * How long the backend's own load step took, compilation excluded: on CUDA the driver's module
	 * load ({@code cuModuleLoadDataEx}), which does not return before the work in flight on the
	 * device is done; on the CPU backend, making the kernel's handle. The context reports a load that
	 * began while it had work in flight and whose load step took at least its threshold as one that
	 * waited for that work ({@code GpuListener.kernelLoaded}). {@code 0} when the backend does not
	 * measure it.
	 */
	default long loadNanos() {
		return 0;
	}

}
