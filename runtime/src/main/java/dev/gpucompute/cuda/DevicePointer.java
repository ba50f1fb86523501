package dev.gpucompute.cuda;

import jcuda.driver.CUdeviceptr;

/**
 * A {@link CUdeviceptr} whose address Java can read, so kernel arguments are packed as plain
 * 8-byte values without creating a pointer object per launch.
 */
final class DevicePointer extends CUdeviceptr {

	/** The device address ({@code CUdeviceptr} value) set by the allocation call. */
	long address() {
		return getNativePointer();
	}

}
