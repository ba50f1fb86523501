package dev.gpucompute.kernels;

import java.util.Objects;

import dev.gpucompute.GpuException;
import org.jspecify.annotations.Nullable;

/**
 * A kernel that {@link KernelFiles} finds is not fully defined: its parameter types cannot be
 * determined, its file name is not a kernel name, or two definitions of the same kernel disagree.
 * The message says which kernel, where it came from and what is wrong, and {@link #kind()} says
 * which of these problems it is, so that a report can say how to fix it (the Spring starter fails
 * start-up with it and its failure analyzer gives each kind its own action).
 */
public class KernelDefinitionException extends GpuException {

	private static final long serialVersionUID = 1L;

	/** The problems a kernel definition can have; each has its own remedy. */
	public enum Kind {

		/** The file name is not a C identifier, so it cannot be the kernel's entry point. */
		INVALID_NAME,

		/**
		 * A file given as a kernel file is not one ({@code .cu}, {@code .ptx}, {@code .cubin},
		 * {@code .fatbin}): with Spring, a {@code gpu.kernels.locations} pattern matched it.
		 */
		NOT_A_KERNEL_FILE,

		/** A PTX, cubin or fatbin file has neither a {@code .params} file nor a {@code KernelSource} of its name. */
		UNKNOWN_PARAMETER_TYPES,

		/** A CUDA C file does not define a {@code __global__} function named like the file. */
		MISSING_ENTRY_POINT,

		/** A CUDA C kernel has a parameter type the launcher cannot pass. */
		UNSUPPORTED_PARAMETER_TYPE,

		/** A {@code .params} file names something that is not a parameter type. */
		INVALID_PARAMS_FILE,

		/**
		 * A {@code .params} file and the {@code KernelSource} given for the kernel (with Spring, its
		 * bean) declare different parameter types.
		 */
		PARAMS_CONTRADICT_SOURCE,

		/** The {@code KernelSource} given for the kernel has CUDA code of its own that differs from the file's. */
		CUDA_CODE_CONTRADICTS_SOURCE,

		/** Two kernel files have the same name. */
		DUPLICATE_FILES,

		/** Two given {@code KernelSource}s (with Spring, two beans) have the same kernel name. */
		DUPLICATE_SOURCES

	}

	private final Kind kind;

	private final String kernelName;

	private final String origin;

	private final String problem;

	private final @Nullable String suggestion;

	/**
	 * @param kind which problem it is
	 * @param kernelName the kernel's name
	 * @param origin where the kernel was found (a file's description, a given source's)
	 * @param problem what is wrong, as a sentence fragment
	 * @param cause the underlying failure, if any
	 */
	public KernelDefinitionException(Kind kind, String kernelName, String origin, String problem,
			@Nullable Throwable cause) {
		this(kind, kernelName, origin, problem, null, cause);
	}

	/**
	 * @param kind which problem it is
	 * @param kernelName the kernel's name
	 * @param origin where the kernel was found (a file's description, a given source's)
	 * @param problem what is wrong, as a sentence fragment
	 * @param suggestion a file name that would fix it (for {@link Kind#INVALID_NAME} and
	 * {@link Kind#MISSING_ENTRY_POINT}), or {@code null}
	 * @param cause the underlying failure, if any
	 */
	public KernelDefinitionException(Kind kind, String kernelName, String origin, String problem,
			@Nullable String suggestion, @Nullable Throwable cause) {
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

	/** Where the kernel was found: a file's description (a path, a Spring resource) or a given source's. */
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
	public @Nullable String suggestion() {
		return this.suggestion;
	}

}
