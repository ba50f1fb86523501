package dev.gpucompute.cuda;

import static jcuda.driver.JCudaDriver.cuCtxGetStreamPriorityRange;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDeviceGetPCIBusId;
import static jcuda.driver.JCudaDriver.cuDeviceGetUuid;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceInfo;
import dev.gpucompute.Dim3;
import dev.gpucompute.StreamPriority;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUuuid;

/**
 * What a device is, read once when the backend opens (with the device's context current): its
 * {@link DeviceInfo}, compute capability, stream-priority range and whether it supports memory
 * pools. Immutable.
 */
final class CudaDeviceFacts {

	final int ordinal;

	final CUdevice device;

	final DeviceInfo info;

	final int major;

	final int minor;

	/** {@code cuDriverGetVersion}, e.g. 13000. */
	final int driverVersion;

	/** The numerically greatest (lowest) stream priority; 0 on every current device. */
	final int leastPriority;

	/** The numerically least (highest) stream priority, e.g. -5. */
	final int greatestPriority;

	/** {@code CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED}: whether cuMemAllocAsync may work here. */
	final boolean memoryPoolsSupported;

	private CudaDeviceFacts(CUdevice device, int ordinal, int driverVersion) {
		this.ordinal = ordinal;
		this.device = device;
		this.driverVersion = driverVersion;
		this.major = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
		this.minor = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
		this.info = readInfo();
		int[] least = new int[1];
		int[] greatest = new int[1];
		CudaDriver.check(cuCtxGetStreamPriorityRange(least, greatest), "cuCtxGetStreamPriorityRange");
		this.leastPriority = least[0];
		this.greatestPriority = greatest[0];
		this.memoryPoolsSupported = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0;
	}

	/**
	 * Reads the facts of {@code device}; its primary context must be current on the calling thread.
	 * @throws dev.gpucompute.GpuException when a driver query fails
	 */
	static CudaDeviceFacts read(CUdevice device, int ordinal, int driverVersion) {
		return new CudaDeviceFacts(device, ordinal, driverVersion);
	}

	/** The architecture number, e.g. 90 for compute capability 9.0. */
	int arch() {
		return this.major * 10 + this.minor;
	}

	/**
	 * The CUDA priority of a stream of {@code priority}: the greatest for {@code HIGH}; 0 (CUDA's
	 * default) for {@code NORMAL}, kept inside the device's range.
	 */
	int cudaPriority(StreamPriority priority) {
		return (priority == StreamPriority.HIGH) ? this.greatestPriority
				: Math.max(this.greatestPriority, Math.min(this.leastPriority, 0));
	}

	private DeviceInfo readInfo() {
		byte[] name = new byte[256];
		CudaDriver.check(cuDeviceGetName(name, name.length, this.device), "cuDeviceGetName");
		CUuuid uuid = new CUuuid();
		CudaDriver.check(cuDeviceGetUuid(uuid, this.device), "cuDeviceGetUuid");
		String[] pciBusId = new String[1];
		CudaDriver.check(cuDeviceGetPCIBusId(pciBusId, 64, this.device), "cuDeviceGetPCIBusId");
		long[] totalMemory = new long[1];
		CudaDriver.check(cuDeviceTotalMem(totalMemory, this.device), "cuDeviceTotalMem");
		int sharedOptIn = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
		int shared = (sharedOptIn > 0) ? sharedOptIn
				: attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
		return new DeviceInfo(Backend.CUDA, this.ordinal, CudaFormat.cString(name), CudaFormat.uuid(uuid.bytes),
				(pciBusId[0] != null) ? pciBusId[0].replace("\0", "").strip() : "", this.major + "." + this.minor,
				attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), totalMemory[0],
				CudaFormat.driverVersion(this.driverVersion),
				attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
				new Dim3(attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)),
				new Dim3(attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y),
						attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)),
				shared, attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_WARP_SIZE));
	}

	private int attribute(int attribute) {
		return CudaDriver.attribute(this.device, attribute);
	}

}
