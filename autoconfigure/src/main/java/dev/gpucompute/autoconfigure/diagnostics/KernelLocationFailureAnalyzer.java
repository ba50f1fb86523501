package dev.gpucompute.autoconfigure.diagnostics;

import java.util.List;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.autoconfigure.kernels.GpuKernels.KernelLocation;
import dev.gpucompute.autoconfigure.kernels.KernelLocationNotFoundException;

/**
 * Explains a {@code gpu.kernels.locations} entry that does not exist, with where it was set and
 * the directories near it that do hold kernel files.
 */
class KernelLocationFailureAnalyzer extends GpuFailureAnalyzer<KernelLocationNotFoundException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, KernelLocationNotFoundException cause) {
		KernelLocation location = cause.location();
		StringBuilder description = new StringBuilder("gpu.kernels.locations contains '").append(location.location())
			.append("'");
		if (location.origin() != null) {
			description.append(" (").append(location.origin()).append(')');
		}
		description.append(", which does not exist, so none of its kernels could be loaded at start-up.");
		List<String> nearby = cause.kernelDirectories();
		if (!nearby.isEmpty()) {
			description.append("\n\nKernel files were found in:");
			nearby.forEach((directory) -> description.append("\n    ").append(directory));
		}
		String hint = (cause.likelyMeant() != null) ? " (did you mean '" + cause.likelyMeant() + "'?)"
				: nearby.isEmpty() ? "" : " (for example to one of the directories listed above)";
		String action = "Correct the location" + hint + " or remove it from gpu.kernels.locations. A directory is searched recursively for .cu, .ptx, .cubin "
				+ "and .fatbin files; 'classpath:' searches every class-path root (for example src/main/resources).";
		return new FailureAnalysis(description.toString(), action, cause);
	}

}
