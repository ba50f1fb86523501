package dev.gpucompute.expression;

import dev.gpucompute.CpuKernel;

/**
 * The CPU body of an expression kernel: the compiled Java, and the kernel it was generated for (so
 * that {@link ExpressionKernel#of} finds it from a {@code KernelSource}). One object per definition
 * text, so that defining the same kernel twice gives the same body.
 */
final class ExpressionBody implements CpuKernel {

	private final CpuKernel compiled;

	private final ExpressionKernel kernel;

	ExpressionBody(CpuKernel compiled, ExpressionKernel kernel) {
		this.compiled = compiled;
		this.kernel = kernel;
	}

	@Override
	public void run(CpuKernel.Block block, CpuKernel.Args args) {
		this.compiled.run(block, args);
	}

	ExpressionKernel kernel() {
		return this.kernel;
	}

}
