package dev.gpucompute.expression;

import java.util.Objects;
import java.util.Optional;
import java.util.Set;

import dev.gpucompute.KernelSource;

/**
 * What was generated for a kernel defined by expressions ({@link ElementwiseKernel},
 * {@link ReductionKernel}), and how close its two backends' results are: found from the kernel's
 * {@link KernelSource} with {@link #of(KernelSource)}. The test support's {@code KernelParity} uses
 * it to check such a kernel on both backends with the right tolerance. Immutable.
 */
public final class ExpressionKernel {

	private final String name;

	private final java.util.List<String> parameters;

	private final String cudaSource;

	private final String javaSource;

	private final boolean fastMath;

	private final int ulps;

	private final Set<String> inexactFunctions;

	ExpressionKernel(String name, java.util.List<String> parameters, String cudaSource, String javaSource, boolean fastMath,
			int ulps, Set<String> inexactFunctions) {
		this.name = name;
		this.parameters = java.util.List.copyOf(parameters);
		this.cudaSource = cudaSource;
		this.javaSource = javaSource;
		this.fastMath = fastMath;
		this.ulps = ulps;
		this.inexactFunctions = java.util.Collections.unmodifiableSortedSet(new java.util.TreeSet<>(inexactFunctions));
	}

	/** The expression kernel behind {@code source}, or empty when it was not generated from expressions. */
	public static Optional<ExpressionKernel> of(KernelSource source) {
		Objects.requireNonNull(source, "source");
		return (source.cpu() instanceof ExpressionBody body) ? Optional.of(body.kernel()) : Optional.empty();
	}

	public String name() {
		return this.name;
	}

	/** The launch parameters' names, in order: {@code n}, then the declared ones (and a reduction's own). */
	public java.util.List<String> parameters() {
		return this.parameters;
	}

	/** The CUDA C source generated for the CUDA backend. */
	public String cudaSource() {
		return this.cudaSource;
	}

	/** The Java source generated (and compiled) for the CPU backend. */
	public String javaSource() {
		return this.javaSource;
	}

	/** Whether the CUDA code is compiled with fast math, giving up bit parity with the CPU backend. */
	public boolean fastMath() {
		return this.fastMath;
	}

	/**
	 * Whether the two backends give the same bits for every input: only IEEE operations and exact
	 * functions are used, and fast math is off. NaN results are NaN on both, with sign and payload
	 * bits that IEEE 754 leaves open (they differ).
	 */
	public boolean bitExact() {
		return !this.fastMath && this.ulps == 0;
	}

	/**
	 * The most ulps by which the result of one call of an inexact (transcendental) function may differ
	 * between the backends (CUDA's documented error plus Java's): 0 for a {@link #bitExact()} kernel.
	 * Where that result goes on into other operations, a difference can grow (a subtraction that
	 * cancels); the kernel's results are then within a bound of your own deriving. Not stated under
	 * fast math ({@code -1}), whose error CUDA does not bound per operation.
	 */
	public int ulps() {
		return this.fastMath ? -1 : this.ulps;
	}

	/** The inexact functions the kernel calls, sorted by name. */
	public Set<String> inexactFunctions() {
		return this.inexactFunctions;
	}

	@Override
	public String toString() {
		return "ExpressionKernel[" + this.name + (bitExact() ? ", bit-exact" : this.fastMath ? ", fast math"
				: ", within " + this.ulps + " ulps per call of " + this.inexactFunctions) + "]";
	}

}
