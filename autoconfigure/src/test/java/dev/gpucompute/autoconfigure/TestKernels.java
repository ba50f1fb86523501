package dev.gpucompute.autoconfigure;

import java.net.URL;
import java.net.URLClassLoader;
import java.nio.FloatBuffer;
import java.util.Objects;

import dev.gpucompute.KernelSource;
import dev.gpucompute.ParamType;

/** Kernels and class paths shared by the tests. */
final class TestKernels {

	private TestKernels() {
	}

	/**
	 * {@code y = a * x + y} with only params and a CPU implementation: the CUDA code comes from
	 * {@code saxpy.cu} when the kernel is paired with the file.
	 */
	static KernelSource saxpyCpu() {
		return KernelSource.named("saxpy")
			.params(ParamType.INT, ParamType.FLOAT, ParamType.BUFFER, ParamType.BUFFER)
			.cpu((block, args) -> {
				int n = args.i32(0);
				float a = args.f32(1);
				FloatBuffer x = args.floats(2);
				FloatBuffer y = args.floats(3);
				for (int i = (int) block.firstIndex(); i < block.endIndex(n); i++) {
					y.put(i, a * x.get(i) + y.get(i));
				}
			});
	}

	/**
	 * A class loader that adds a class-path root holding {@code gpu/kernels/saxpy.cu}, the default
	 * kernel location. Kept off the shared test class path so that other tests see no kernel files.
	 */
	static ClassLoader withDefaultLocationKernels() {
		ClassLoader parent = TestKernels.class.getClassLoader();
		URL root = Objects.requireNonNull(parent.getResource("kernels/default-root/"), "kernels/default-root/");
		return new URLClassLoader(new URL[] { root }, parent);
	}

}
