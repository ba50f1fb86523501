package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.autoconfigure.kernels.KernelDefinitionException;

/**
 * Explains a kernel found at start-up whose definition is incomplete or contradictory (unknown
 * parameter types, a file name that is no kernel name, two definitions of one kernel).
 */
class KernelDefinitionFailureAnalyzer extends GpuFailureAnalyzer<KernelDefinitionException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, KernelDefinitionException cause) {
		String description = "Kernel '" + cause.kernelName() + "' from " + cause.origin() + " cannot be loaded: "
				+ cause.problem() + ".";
		String action = "Give every kernel file under gpu.kernels.locations a name that is its extern \"C\" entry point "
				+ "and parameter types, from one of: a KernelSource bean of the same name (which can also supply the "
				+ "CPU implementation), a '" + cause.kernelName() + ".params' file beside it (for example 'int, float, "
				+ "buffer, buffer'), or, for CUDA C, a '__global__ void " + cause.kernelName()
				+ "(...)' signature with int, long long, float, double and pointer parameters.";
		return new FailureAnalysis(description, action, cause);
	}

}
