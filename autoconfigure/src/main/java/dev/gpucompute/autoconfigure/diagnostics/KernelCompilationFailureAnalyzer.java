package dev.gpucompute.autoconfigure.diagnostics;

import org.springframework.boot.diagnostics.FailureAnalysis;

import dev.gpucompute.KernelCompilationException;
import dev.gpucompute.kernels.KernelLoadException;

/**
 * Explains a kernel that could not be compiled or loaded at start-up, with the compiler's log
 * and, for kernels found by the auto-configuration, the file or bean it came from.
 */
class KernelCompilationFailureAnalyzer extends GpuFailureAnalyzer<KernelCompilationException> {

	private static final String LOG_MARKER = "\n--- compiler log ---";

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, KernelCompilationException cause) {
		KernelLoadException load = findCause(rootFailure, KernelLoadException.class);
		StringBuilder description = new StringBuilder();
		String message = String.valueOf(cause.getMessage());
		int log = message.indexOf(LOG_MARKER);
		description.append((log >= 0) ? message.substring(0, log) : message);
		if (load != null) {
			description.append("\n\nThe kernel was loaded at start-up from ").append(load.origin()).append('.');
		}
		if (!cause.compilerLog().isBlank()) {
			description.append("\n\nCompiler log:\n");
			cause.compilerLog().strip().lines().forEach((line) -> description.append("    ").append(line).append('\n'));
		}
		String action = "Fix the kernel where the compiler log points (options come from gpu.kernels.compile-options and "
				+ "the kernel's own compileOptions). If CUDA C cannot be compiled on this machine (NVRTC missing), ship "
				+ "the kernel as PTX or cubin instead. To start without the GPU meanwhile, set gpu.backend=cpu.";
		return new FailureAnalysis(description.toString().strip(), action, cause);
	}

}
