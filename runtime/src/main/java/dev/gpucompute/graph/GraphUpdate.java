package dev.gpucompute.graph;

/** How a new capture was applied to an existing {@link GpuGraph} ({@link GraphCapture#endAndUpdate}). */
public enum GraphUpdate {

	/**
	 * The instantiated graph took the new capture's parameters in place (kernel arguments, buffers,
	 * copy ranges): the cheap path, for a capture of the same shape.
	 */
	UPDATED_IN_PLACE,

	/**
	 * The backend refused the update (another shape: other kernels, another number of operations or
	 * other dependencies; or a driver without the update entry point), so the new capture was
	 * instantiated anew and replaced the old one. Logged at DEBUG with the reason.
	 */
	REINSTANTIATED

}
