package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * cuMemAllocAsync is used only when the device supports pools and a trial allocation works: a device that
 * reports pools but fails the trial gets the synchronous cuMemAlloc, with the reason, instead of failing later.
 */
class AllocatorChoiceTests {

	@Test
	void streamOrderedWhenPoolsAreSupportedAndTheTrialWorks() {
		AllocatorChoice choice = AllocatorChoice.decide(true, CudaErrors.SUCCESS);
		assertThat(choice.streamOrdered()).isTrue();
		assertThat(choice.reason()).contains("cuMemAllocAsync");
	}

	@Test
	void synchronousWhenTheDeviceHasNoPools() {
		AllocatorChoice choice = AllocatorChoice.decide(false, null);
		assertThat(choice.streamOrdered()).isFalse();
		assertThat(choice.reason()).contains("MEMORY_POOLS_SUPPORTED is 0", "cuMemAlloc");
	}

	@Test
	void synchronousWhenTheTrialFailsAlthoughPoolsAreReported() {
		AllocatorChoice choice = AllocatorChoice.decide(true, CudaErrors.NOT_SUPPORTED);
		assertThat(choice.streamOrdered()).isFalse();
		assertThat(choice.reason()).contains("trial cuMemAllocAsync failed (CUDA_ERROR_NOT_SUPPORTED (801))",
				"allocating with cuMemAlloc");
	}

}
