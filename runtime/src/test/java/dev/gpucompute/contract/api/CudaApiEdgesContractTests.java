package dev.gpucompute.contract.api;

import static org.assertj.core.api.Assertions.assertThat;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.gpucompute.Backend;
import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuContextBuilder;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;
import dev.gpucompute.contract.ContractKernels;
import dev.gpucompute.cuda.CudaTestSupport;

/**
 * The API-edge contract on the CUDA backend, and a JCuda call of the application's own on a pooled
 * stream between the runtime's work. Skipped with the probe's reason without a device; fails instead
 * when {@code GPU_REQUIRED=1}.
 */
@Tag("gpu")
@ExtendWith(CudaTestSupport.RequiresCuda.class)
class CudaApiEdgesContractTests extends ApiEdgesContractSuite {

	@Override
	protected GpuContextBuilder builder() {
		return GpuContext.builder().backend(Backend.CUDA);
	}

	@Test
	void aJCudaMemsetOnThePooledStreamRunsInOrderWithTheRuntimesWork() {
		GpuLauncher launcher = this.context.launcher();
		int n = 1 << 16;
		float[] y = new float[n];
		try (StreamLease lease = this.context.streams().acquire(); StreamScope scope = launcher.useStream(lease.stream());
				DeviceBuffer x = launcher.upload(HostArray.of(new float[n])); DeviceBuffer dy = launcher.upload(HostArray.of(new float[n]))) {
			// The runtime's upload of zeros, then our memset of 1.0f (0x3f800000), then the runtime's saxpy: y = 2x + y.
			CUdeviceptr pointer = x.nativeHandle(CUdeviceptr.class).orElseThrow();
			CUstream stream = lease.stream().nativeHandle(CUstream.class).orElseThrow();
			assertThat(JCudaDriver.cuMemsetD32Async(pointer, Float.floatToIntBits(1f), n, stream)).isZero();
			launcher.launch(ContractKernels.SAXPY, LaunchConfig.linear(n, 256), n, 2f, x, dy);
			dy.download(HostArray.of(y)).join();
		}
		for (int i = 0; i < n; i++) {
			assertThat(y[i]).as("y[%d]", i).isEqualTo(2f);
		}
	}

}
