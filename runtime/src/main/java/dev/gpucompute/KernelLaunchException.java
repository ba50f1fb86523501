package dev.gpucompute;

import org.jspecify.annotations.Nullable;

/**
 * A kernel failed while it ran, or the backend refused to start it. Raised at launch or at the
 * next synchronisation of the stream the kernel ran on; the message names both.
 */
public class KernelLaunchException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final String kernelName;

	private final String streamName;

	public KernelLaunchException(String kernelName, String streamName, String message, @Nullable Throwable cause) {
		super("Kernel '" + kernelName + "' on stream " + streamName + " failed: " + message, cause);
		this.kernelName = kernelName;
		this.streamName = streamName;
	}

	/** The name of the kernel that failed. */
	public String kernelName() {
		return this.kernelName;
	}

	/** The name of the stream the kernel was launched on. */
	public String streamName() {
		return this.streamName;
	}

}
