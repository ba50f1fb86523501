package dev.gpucompute.contract.device;

import dev.gpucompute.Backend;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;

/** The multi-device contract with the CPU backend standing in for three devices. */
class CpuMultiDeviceContractTests extends MultiDeviceContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CPU).cpuDevices(3).cpuThreads(2);
	}

}
