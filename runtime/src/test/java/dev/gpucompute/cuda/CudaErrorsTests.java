package dev.gpucompute.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import dev.gpucompute.ContextClosedException;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuOutOfMemoryException;
import dev.gpucompute.KernelLaunchException;
import dev.gpucompute.UnsupportedBackendOperationException;

/** CUresult → exception mapping; pure Java, runs without a driver. */
class CudaErrorsTests {

	@Test
	void outOfMemoryBecomesGpuOutOfMemoryExceptionWithTheRequestedSize() {
		GpuException ex = CudaErrors.toException(2, "cuMemAllocAsync", null, "pool-3", 1L << 40);
		assertThat(ex).isInstanceOf(GpuOutOfMemoryException.class);
		assertThat(((GpuOutOfMemoryException) ex).requestedBytes()).isEqualTo(1L << 40);
		assertThat(ex.getMessage()).contains("cuMemAllocAsync", "CUDA_ERROR_OUT_OF_MEMORY (2)", "pool-3",
				String.valueOf(1L << 40));
	}

	@Test
	void failureWithAKernelNamesKernelAndStream() {
		GpuException ex = CudaErrors.toException(700, "cuStreamSynchronize", "oob", "pool-1", 0);
		assertThat(ex).isInstanceOf(KernelLaunchException.class);
		KernelLaunchException launch = (KernelLaunchException) ex;
		assertThat(launch.kernelName()).isEqualTo("oob");
		assertThat(launch.streamName()).isEqualTo("pool-1");
		assertThat(ex.getMessage()).contains("Kernel 'oob' on stream pool-1", "cuStreamSynchronize",
				"CUDA_ERROR_ILLEGAL_ADDRESS (700)", "sticky");
	}

	@Test
	void launchRefusalsNameTheKernelAndExplain() {
		GpuException ex = CudaErrors.toException(701, "cuLaunchKernel", "big", "s", 0);
		assertThat(ex).isInstanceOf(KernelLaunchException.class);
		assertThat(ex.getMessage()).contains("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many threads per block");
	}

	@Test
	void notSupportedIsUnsupportedBackendOperation() {
		assertThat(CudaErrors.toException(801, "cuMemAllocAsync", null, null, 0))
			.isInstanceOf(UnsupportedBackendOperationException.class)
			.hasMessageContaining("CUDA_ERROR_NOT_SUPPORTED");
	}

	@Test
	void destroyedContextIsContextClosed() {
		assertThat(CudaErrors.toException(4, "cuStreamQuery", null, "s", 0)).isInstanceOf(ContextClosedException.class);
		assertThat(CudaErrors.toException(709, "cuStreamQuery", null, "s", 0)).isInstanceOf(ContextClosedException.class);
	}

	@Test
	void otherCodesArePlainGpuExceptionsNamingCallAndStream() {
		GpuException ex = CudaErrors.toException(400, "cuEventRecord", null, "pool-2", 0);
		assertThat(ex.getClass()).isEqualTo(GpuException.class);
		assertThat(ex.getMessage()).contains("cuEventRecord returned CUDA_ERROR_INVALID_HANDLE (400)", "stream pool-2");
	}

	@Test
	void unknownAndNewerCodesStillHaveNames() {
		assertThat(CudaErrors.name(35)).isEqualTo("CUDA_ERROR_INSUFFICIENT_DRIVER");
		assertThat(CudaErrors.name(721)).isEqualTo("CUDA_ERROR_TENSOR_MEMORY_LEAK");
		assertThat(CudaErrors.name(12345)).isEqualTo("CUDA error 12345");
		assertThat(CudaErrors.describe(12345)).isEqualTo("CUDA error 12345 (12345)");
	}

	@Test
	void stickyErrorsAreThoseThatCorruptTheContext() {
		for (int code : new int[] { 700, 710, 714, 715, 716, 717, 718, 719, 702, 214 }) {
			assertThat(CudaErrors.isSticky(code)).as("code %d", code).isTrue();
		}
		for (int code : new int[] { 0, 1, 2, 600, 701, 400, 801, 999 }) {
			assertThat(CudaErrors.isSticky(code)).as("code %d", code).isFalse();
		}
	}

	@Test
	void stickyProblemSaysWhatHappenedAndWhatToDo() {
		String problem = CudaErrors.stickyProblem(700, "cuStreamSynchronize", "oob", "pool-1");
		assertThat(problem).contains("CUDA_ERROR_ILLEGAL_ADDRESS (700)", "kernel 'oob'", "stream pool-1",
				"cuStreamSynchronize", "Restart the process");
	}

}
