package dev.gpucompute.autoconfigure.kernels;

import java.util.Objects;

import dev.gpucompute.GpuException;

/**
 * A kernel found at start-up is not fully defined: its parameter types cannot be determined, its
 * file name is not a kernel name, or two definitions of the same kernel disagree. Fails start-up;
 * the message says which kernel, where it came from and what is wrong, and {@link #kind()} says
 * which of these problems it is, so that the start-up report can say how to fix it.
 */
public class KernelDefinitionException extends GpuException {

	private static final long serialVersionUID = 1L;

	/** The problems a kernel definition can have; each has its own remedy. */
	public enum Kind {

		/** The file name is not a C identifier, so it cannot be the kernel's entry point. */
		INVALID_NAME,

		/** A file matched by a {@code gpu.kernels.locations} pattern is not a kernel file. */
		NOT_A_KERNEL_FILE,

		/** A PTX, cubin or fatbin file has neither a {@code .params} file nor a bean. */
		UNKNOWN_PARAMETER_TYPES,

		/** A CUDA C file does not define a {@code __global__} function named like the file. */
		MISSING_ENTRY_POINT,

		/** A CUDA C kernel has a parameter type the launcher cannot pass. */
		UNSUPPORTED_PARAMETER_TYPE,

		/** A {@code .params} file names something that is not a parameter type. */
		INVALID_PARAMS_FILE,

		/** A {@code .params} file and the kernel's bean declare different parameter types. */
		PARAMS_CONTRADICT_BEAN,

		/** The kernel's bean has CUDA code of its own that differs from the file's. */
		CUDA_CODE_CONTRADICTS_BEAN,

		/** Two kernel files have the same name. */
		DUPLICATE_FILES,

		/** Two {@code KernelSource} beans have the same kernel name. */
		DUPLICATE_BEANS

	}

	private final Kind kind;

	private final String kernelName;

	private final String origin;

	private final String problem;

	private final String suggestion;

	/**
	 * @param kind which problem it is
	 * @param kernelName the kernel's name
	 * @param origin where the kernel was found (a resource description or a bean name)
	 * @param problem what is wrong, as a sentence fragment
	 * @param cause the underlying failure, if any
	 */
	public KernelDefinitionException(Kind kind, String kernelName, String origin, String problem, Throwable cause) {
		this(kind, kernelName, origin, problem, null, cause);
	}

	/**
	 * @param kind which problem it is
	 * @param kernelName the kernel's name
	 * @param origin where the kernel was found (a resource description or a bean name)
	 * @param problem what is wrong, as a sentence fragment
	 * @param suggestion a file name that would fix it (for {@link Kind#INVALID_NAME} and
	 * {@link Kind#MISSING_ENTRY_POINT}), or {@code null}
	 * @param cause the underlying failure, if any
	 */
	public KernelDefinitionException(Kind kind, String kernelName, String origin, String problem, String suggestion,
			Throwable cause) {
		super("Kernel '" + kernelName + "' (" + origin + "): " + problem, cause);
		this.kind = Objects.requireNonNull(kind, "kind");
		this.kernelName = kernelName;
		this.origin = origin;
		this.problem = problem;
		this.suggestion = suggestion;
	}

	/** Which problem the definition has. */
	public Kind kind() {
		return this.kind;
	}

	public String kernelName() {
		return this.kernelName;
	}

	/** Where the kernel was found: a resource description or a bean name. */
	public String origin() {
		return this.origin;
	}

	/** What is wrong with the definition. */
	public String problem() {
		return this.problem;
	}

	/**
	 * A file name that would fix the problem: a valid C identifier for a file whose name is not
	 * one, or the entry point a CUDA C file does define; {@code null} when there is none.
	 */
	public String suggestion() {
		return this.suggestion;
	}

}
