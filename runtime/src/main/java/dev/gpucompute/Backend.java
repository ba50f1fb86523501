package dev.gpucompute;

/** The kinds of device backend a {@link GpuContext} can run on. */
public enum Backend {

	/** NVIDIA GPUs through the CUDA driver API (JCuda). */
	CUDA,

	/** The host's cores, with the same stream and event semantics; runs everywhere. */
	CPU

}
