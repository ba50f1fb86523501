package dev.gpucompute.test.guide;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuContext;
import dev.gpucompute.GpuException;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.StreamLease;
import dev.gpucompute.StreamScope;

/**
 * A JCuda call of our own on a pooled stream, between the runtime's work: fill an image with a grey
 * level with {@code cuMemsetD32Async}, then blur it. CUDA only.
 */
public final class JCudaInterop {

	private JCudaInterop() {
	}

	public static float[] greyThenBlur(GpuContext gpu, int width, int height, float grey) {
		GpuLauncher launcher = gpu.launcher();
		int n = width * height;
		float[] result = new float[n];
		try (StreamLease lease = gpu.streams().acquire();
				StreamScope scope = launcher.useStream(lease.stream());
				DeviceBuffer image = launcher.allocate(n, ElementType.FLOAT);
				DeviceBuffer out = launcher.allocate(n, ElementType.FLOAT)) {
			// Handles for work on this stream; empty on the CPU backend, which has no native ones.
			CUdeviceptr pixels = image.nativeHandle(CUdeviceptr.class)
				.orElseThrow(() -> new IllegalStateException("needs the CUDA backend, not " + gpu.backend()));
			CUstream stream = lease.stream().nativeHandle(CUstream.class).orElseThrow();
			int status = JCudaDriver.cuMemsetD32Async(pixels, Float.floatToIntBits(grey), n, stream);
			if (status != 0) {
				throw new GpuException("cuMemsetD32Async failed with CUresult " + status);
			}
			launcher.launch(Blur.BLUR, Blur.launchFor(width, height), width, height, image, out);   // after the memset
			out.download(HostArray.of(result)).join();
		}   // the runtime frees the memory, after the work on the stream
		return result;
	}

}
