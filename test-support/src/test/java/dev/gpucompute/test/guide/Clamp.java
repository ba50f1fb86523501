package dev.gpucompute.test.guide;

import dev.gpucompute.KernelSource;
import dev.gpucompute.expression.ElementwiseKernel;

/**
 * Clamps values into [lo, hi] and counts, per element, how far outside they were: locals, an
 * {@code if}, and fmin/fmax, which ignore a NaN operand (as the GPU's min and max do), so a NaN
 * input becomes {@code lo}.
 */
public final class Clamp {

	public static final KernelSource CLAMP = ElementwiseKernel.named("clamp")
		.in("float lo, float hi, float[] x")
		.out("float[] y, int[] outside")
		.body("""
			float v = fmin(fmax(x, lo), hi);
			int flag = 0;
			if (x < lo) {
			  flag = -1;
			} else if (x > hi) {
			  flag = 1;
			}
			y = v;
			outside = flag""")
		.build();

	private Clamp() {
	}

}
