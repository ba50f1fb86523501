package dev.gpucompute.sample.search;

import dev.gpucompute.Backend;

/** {@link StorageFaultsCudaGpuTest}'s checks ({@link RefusedWriteChecks}) on the CPU backend, in CI. */
class StorageFaultsCpuTest extends RefusedWriteChecks {

	@Override
	Backend backend() {
		return Backend.CPU;
	}

}
