package dev.gpucompute;

import org.jspecify.annotations.Nullable;

/** A kernel could not be compiled or loaded. Carries the compiler's log when there is one. */
public class KernelCompilationException extends GpuException {

	private static final long serialVersionUID = 1L;

	private final String kernelName;

	private final String compilerLog;

	public KernelCompilationException(String kernelName, String message, @Nullable String compilerLog, @Nullable Throwable cause) {
		super("Kernel '" + kernelName + "' could not be compiled: " + message
				+ ((compilerLog != null && !compilerLog.isBlank()) ? "\n--- compiler log ---\n" + compilerLog.strip() : ""),
				cause);
		this.kernelName = kernelName;
		this.compilerLog = (compilerLog != null) ? compilerLog : "";
	}

	public String kernelName() {
		return this.kernelName;
	}

	/** The compiler's output, empty when the failure happened before compilation. */
	public String compilerLog() {
		return this.compilerLog;
	}

}
