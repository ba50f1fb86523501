package dev.gpucompute;

/**
 * What a device is and what it allows. The launch limits ({@link #maxThreadsPerBlock()},
 * {@link #maxBlockDim()}, {@link #maxGridDim()}, {@link #maxSharedMemoryPerBlock()}) are checked
 * before every launch, so a bad configuration fails with a message instead of a driver code.
 *
 * @param backend the backend the device belongs to
 * @param ordinal the device ordinal ({@code gpu.device})
 * @param name the device's name, e.g. {@code NVIDIA H100 80GB HBM3}
 * @param uuid the device UUID ({@code GPU-xxxxxxxx-...} on CUDA, as DCGM and nvidia-smi print it)
 * @param pciBusId the PCI bus id, empty on the CPU backend
 * @param computeCapability {@code major.minor} on CUDA, empty on the CPU backend
 * @param multiprocessors streaming multiprocessors (CUDA) or worker threads (CPU)
 * @param totalMemoryBytes device memory, or the CPU backend's memory budget
 * @param driverVersion the driver version, e.g. {@code 13.0}, or the Java version on the CPU backend
 * @param maxThreadsPerBlock most threads in one block
 * @param maxBlockDim most threads per block along each axis
 * @param maxGridDim most blocks along each axis
 * @param maxSharedMemoryPerBlock most dynamic shared memory per block, in bytes
 * @param warpSize threads per warp (1 on the CPU backend)
 */
public record DeviceInfo(Backend backend, int ordinal, String name, String uuid, String pciBusId,
		String computeCapability, int multiprocessors, long totalMemoryBytes, String driverVersion,
		int maxThreadsPerBlock, Dim3 maxBlockDim, Dim3 maxGridDim, int maxSharedMemoryPerBlock, int warpSize) {
}
