package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.kernels.KernelDefinitionException;

/**
 * Explains a kernel found at start-up whose definition is incomplete or contradictory: each
 * {@link KernelDefinitionException.Kind kind of problem} gets the action that fixes it.
 */
class KernelDefinitionFailureAnalyzer extends GpuFailureAnalyzer<KernelDefinitionException> {

	private static final String PARAM_TYPES = "int, long, float, double and buffer";

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, KernelDefinitionException cause) {
		String description = "Kernel '" + cause.kernelName() + "' from " + cause.origin() + " cannot be loaded: "
				+ cause.problem() + ".";
		return new FailureAnalysis(description, action(cause), cause);
	}

	private static String action(KernelDefinitionException cause) {
		String name = cause.kernelName();
		String suggestion = cause.suggestion();
		return switch (cause.kind()) {
			case INVALID_NAME -> "Rename the file to a C identifier (letters, digits and underscores, not starting with a "
					+ "digit)" + ((suggestion != null) ? ", for example '" + suggestion + "'," : "")
					+ " and give its extern \"C\" entry point the same name: the file name is the kernel's name.";
			case NOT_A_KERNEL_FILE -> "Make gpu.kernels.locations match kernel files only (.cu, .ptx, .cubin, .fatbin): "
					+ "name a directory (for example 'classpath:gpu/kernels/') or a pattern with the extension (for "
					+ "example 'classpath:gpu/kernels/**/*.cu').";
			case UNKNOWN_PARAMETER_TYPES -> "Declare the parameter types of '" + name + "': add a file '" + name
					+ ".params' beside it listing them in order (" + PARAM_TYPES + ", for example 'int, float, buffer, "
					+ "buffer'), or define a KernelSource bean named '" + name + "' with .params(...), which can also "
					+ "supply the CPU implementation.";
			case MISSING_ENTRY_POINT -> "Name the file after the kernel it defines: a file '" + name + ".cu' must define "
					+ "extern \"C\" __global__ void " + name + "(...). "
					+ ((suggestion != null) ? "Rename the file to '" + suggestion + "', or rename the function."
							: "Rename the file or the function, and check the extern \"C\" linkage.");
			case UNSUPPORTED_PARAMETER_TYPE -> "Change the parameter to a type the launcher can pass (a pointer, int, "
					+ "long long, float or double), or, if the kernel takes it in a compatible layout, declare the types "
					+ "yourself in a '" + name + ".params' file or a KernelSource bean named '" + name + "'.";
			case INVALID_PARAMS_FILE -> "List only " + PARAM_TYPES + " in '" + name + ".params', separated by commas or "
					+ "spaces, in the order of the kernel's parameters; '#' starts a comment.";
			case PARAMS_CONTRADICT_SOURCE -> "Delete '" + name + ".params' (the bean's .params(...) is enough), or make the "
					+ "two list the same types.";
			case CUDA_CODE_CONTRADICTS_SOURCE -> "Remove .cuda(...) or .cudaResource(...) from the KernelSource bean '" + name
					+ "': the kernel file supplies the CUDA code. Or delete the file, if the bean's code is the one to run.";
			case DUPLICATE_FILES -> "Keep one kernel file named '" + name + "': delete or rename the other, or narrow "
					+ "gpu.kernels.locations (a 'classpath:' location is searched in every jar and directory of the class "
					+ "path) so that only one is found.";
			case DUPLICATE_SOURCES -> "Give each KernelSource bean its own kernel name (KernelSource.named(...)), or remove "
					+ "one of the two beans.";
		};
	}

}
