package dev.gpucompute.autoconfigure.metrics;

import io.micrometer.observation.Observation;

import dev.gpucompute.GpuStream;
import org.jspecify.annotations.Nullable;

/**
 * The {@link Observation.Context} of one kernel launch: which kernel, on which stream, and whether
 * the backend accepted it. The observation covers the enqueue on the calling thread, not the
 * kernel's run on the device (launches are asynchronous; device time is {@code gpu.kernel.duration}).
 */
public final class KernelLaunchContext extends Observation.Context {

	private final String kernelName;

	private volatile @Nullable GpuStream stream;

	private volatile boolean enqueued;

	KernelLaunchContext(String kernelName, @Nullable GpuStream stream) {
		this.kernelName = kernelName;
		this.stream = stream;
	}

	/** The launched kernel's name, as loaded into the context. */
	public String getKernelName() {
		return this.kernelName;
	}

	/** The stream the launch went to, or {@code null} when the launch failed before one was chosen. */
	public @Nullable GpuStream getStream() {
		return this.stream;
	}

	void setStream(GpuStream stream) {
		this.stream = stream;
	}

	/** Whether the backend accepted the launch. */
	public boolean isEnqueued() {
		return this.enqueued;
	}

	void setEnqueued(boolean enqueued) {
		this.enqueued = enqueued;
	}

}
