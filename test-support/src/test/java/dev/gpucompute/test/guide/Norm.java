package dev.gpucompute.test.guide;

import dev.gpucompute.DeviceBuffer;
import dev.gpucompute.ElementType;
import dev.gpucompute.GpuLauncher;
import dev.gpucompute.HostArray;
import dev.gpucompute.expression.Reduction;
import dev.gpucompute.expression.ReductionKernel;

/** The Euclidean norm of a vector: a reduction whose order is the kernel's, so both backends give the same bits. */
public final class Norm {

	public static final Reduction NORM = ReductionKernel.named("norm2")
		.in("float[] x")
		.out("float[] result")
		.map("x * x")                      // each element's value
		.reduce("a + b")                   // how two values combine, in the kernel's fixed order
		.identity("0.0f")                  // the result for an empty vector
		.postMap("sqrt(a)")                // what is written
		.build();

	private Norm() {
	}

	/** The norm of {@code x}, computed on the current stream; 0 for an empty vector. */
	public static float norm(GpuLauncher launcher, float[] x) {
		float[] result = new float[1];
		try (DeviceBuffer data = launcher.allocate(Math.max(1, x.length), ElementType.FLOAT);
				DeviceBuffer out = launcher.allocate(1, ElementType.FLOAT)) {
			if (x.length > 0) {
				data.upload(HostArray.of(x));
			}
			NORM.launch(launcher, x.length, data, out);   // two launches of one kernel on the current stream
			out.download(HostArray.of(result)).join();
		}
		return result[0];
	}

}
