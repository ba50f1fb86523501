package dev.gpucompute.test.guide;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.KernelSource;
import dev.gpucompute.LaunchConfig;
import dev.gpucompute.expression.ElementwiseKernel;

/** y = a * x + y, written once: CUDA C and the CPU backend's Java are generated from the body. */
public final class Saxpy {

	public static final KernelSource SAXPY = ElementwiseKernel.named("saxpy")
		.in("float a, float[] x")          // the kernel's parameters: int n, then these, then the outputs
		.out("float[] y")                  // written (and here read) at the element index i
		.body("y = a * x + y")             // x and y stand for x[i] and y[i]
		.build();                          // parsed, checked and compiled now: a mistake fails here

	private Saxpy() {
	}

	/** {@code a * x + y} on the current stream, the same bits on CUDA and on the CPU backend. */
	public static float[] saxpy(GpuLauncher launcher, float a, float[] x, float[] y) {
		float[] result = new float[y.length];
		try (DeviceBuffer dx = launcher.upload(HostArray.of(x)); DeviceBuffer dy = launcher.upload(HostArray.of(y))) {
			launcher.launch(SAXPY, LaunchConfig.linear(y.length, 256), y.length, a, dx, dy);
			dy.download(HostArray.of(result)).join();
		}
		return result;
	}

}
