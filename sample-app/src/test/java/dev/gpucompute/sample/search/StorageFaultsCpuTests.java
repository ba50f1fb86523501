package dev.gpucompute.sample.search;

import dev.gpucompute.Backend;

/** {@link StorageFaultsCudaGpuTests}'s checks ({@link RefusedWriteSuite}) on the CPU backend, in CI. */
class StorageFaultsCpuTests extends RefusedWriteSuite {

	@Override
	Backend backend() {
		return Backend.CPU;
	}

}
