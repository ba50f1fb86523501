package dev.gpucompute.test.guide;

import static dev.gpucompute.ParamType.BUFFER;
import static dev.gpucompute.ParamType.FLOAT;
import static dev.gpucompute.ParamType.INT;

import java.nio.FloatBuffer;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.gpucompute.KernelSource;

/**
 * The Java half of kernel {@code brighten}: its CUDA code is the file {@code brighten.cu} under
 * {@code gpu.kernels.locations}; this bean adds the parameter types and the CPU body. Both are loaded
 * at start-up, and a kernel that does not compile fails start-up.
 */
@Configuration(proxyBeanMethods = false)
public class BrightenKernels {

	@Bean
	KernelSource brighten() {
		return KernelSource.named("brighten")
			.params(INT, FLOAT, BUFFER, BUFFER)
			.cpu((block, args) -> {
				int n = args.i32(0);
				float gain = args.f32(1);
				FloatBuffer in = args.floats(2);
				FloatBuffer out = args.floats(3);
				for (int i = (int) block.firstIndex(); i < block.endIndex(n); i++) {
					out.put(i, Math.min(in.get(i) * gain, 1.0f));
				}
			});
	}

}
