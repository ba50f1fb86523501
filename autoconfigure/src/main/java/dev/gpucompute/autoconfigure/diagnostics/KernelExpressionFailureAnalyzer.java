package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.expression.KernelExpressionException;

/**
 * Explains a kernel bean defined by expressions ({@code ElementwiseKernel}, {@code ReductionKernel})
 * whose definition has a mistake: where it is (the part, line and column, with the line quoted and a
 * caret) and what is wrong, so that start-up fails there rather than at the first request.
 */
class KernelExpressionFailureAnalyzer extends GpuFailureAnalyzer<KernelExpressionException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, KernelExpressionException cause) {
		String description = "Kernel '" + cause.kernelName() + "' is defined by expressions, and its " + cause.part()
				+ " has a mistake at line " + cause.line() + ", column " + cause.column() + ": " + cause.problem() + "\n"
				+ cause.excerpt();
		String action = "Correct the " + cause.part() + " of kernel '" + cause.kernelName() + "' where the caret points. "
				+ "The language (types, operators, functions and what each computes on both backends) is described in "
				+ "docs/guide.md, \"Kernels written once\". Expressions are code the application supplies: never build "
				+ "one from request data.";
		return new FailureAnalysis(description, action, cause);
	}

}
