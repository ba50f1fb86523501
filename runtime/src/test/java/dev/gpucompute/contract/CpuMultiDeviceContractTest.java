package dev.gpucompute.contract;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;

/** The multi-device contract with the CPU backend standing in for three devices. */
class CpuMultiDeviceContractTest extends MultiDeviceContractSuite {

	@Override
	protected GpuContext.Builder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuDevices(3).cpuThreads(2);
	}

}
