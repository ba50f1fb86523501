package dev.gpucompute.expression;

import java.util.LinkedHashMap;
import java.util.Map;

import dev.gpucompute.KernelSource;
import dev.gpucompute.internal.expression.ExpressionError;
import dev.gpucompute.internal.expression.Generated;
import dev.gpucompute.internal.expression.ReductionGenerator;
import org.jspecify.annotations.Nullable;

/**
 * A reduction written once: {@code map} gives a value for every element index {@code i},
 * {@code reduce(a, b)} combines two values, {@code identity} is the result of nothing, and
 * {@code postMap(a)} turns the reduced value into what is written. Over the whole input
 * ({@code result[0]}) or over fixed-size segments ({@link #segmented()}: {@code result[s]} per segment).
 * {@link #build()} generates CUDA C and Java from the same expressions.
 *
 * <pre>{@code
 * Reduction norm = ReductionKernel.named("norm2")
 *     .in("float[] x")
 *     .out("float[] result")
 *     .map("x * x")
 *     .reduce("a + b")
 *     .identity("0.0f")
 *     .postMap("sqrt(a)")
 *     .build();
 * norm.launch(launcher, n, x, result);   // on the current stream: int n, then in, then out
 * }</pre>
 *
 * <p><b>The order is the kernel's.</b> Values are combined in an order fixed by n (and the segment
 * length), never by the launch configuration or the CPU backend's threads, so both backends give the
 * same bits, for {@code a + b} on floats too: 256 lanes, lane {@code l} combining values {@code l},
 * {@code l + 256}, ... from left to right, then a halving tree over the lanes (lane {@code j} with lane
 * {@code j + h}, h = 128 down to 1); a whole input in chunks of 4,096 elements reduced so, then the
 * chunks' results reduced so. {@code reduce} should be associative and commutative (sum, product, min,
 * max, ...) for the result to mean what it says; the bits are the same on both backends either way.
 *
 * <p><b>Launching.</b> {@link Reduction#launch} does it on the calling thread's current stream (a
 * stream scope, a batch handler's stream, a stream-parallel branch). A whole-input reduction runs as
 * two launches of the one kernel (one block per chunk, then one block over the chunks' results) with a
 * scratch buffer allocated and freed on that stream; a segmented one is one launch, one block per
 * segment. {@link Reduction#source()} is the kernel to load at start-up (a bean, or
 * {@code GpuContext.builder().kernels(...)}).
 *
 * <p>The language and its definitions are {@link ElementwiseKernel}'s. Expressions are code the
 * application supplies: never build one from request data. Immutable.
 */
public final class ReductionKernel {

	private final String name;

	private final String in;

	private final String out;

	private final @Nullable String map;

	private final @Nullable String reduce;

	private final @Nullable String identity;

	private final @Nullable String postMap;

	private final boolean segmented;

	private final boolean fastMath;

	private ReductionKernel(String name, String in, String out, @Nullable String map, @Nullable String reduce, @Nullable String identity,
			@Nullable String postMap, boolean segmented, boolean fastMath) {
		this.name = name;
		this.in = in;
		this.out = out;
		this.map = map;
		this.reduce = reduce;
		this.identity = identity;
		this.postMap = postMap;
		this.segmented = segmented;
		this.fastMath = fastMath;
	}

	/**
	 * Starts the definition of a reduction.
	 * @param name a C identifier: the CUDA entry point and the kernel's name in the launcher
	 */
	public static ReductionKernel named(String name) {
		KernelSource.named(name); // checks the name
		return new ReductionKernel(name, "", "", null, null, null, null, false, false);
	}

	/** The inputs, after {@code int n} (and a segmented reduction's {@code int segmentLength}): scalars and arrays. */
	public ReductionKernel in(String declarations) {
		return new ReductionKernel(this.name, Sources.require(declarations, "declarations"), this.out, this.map, this.reduce,
				this.identity, this.postMap, this.segmented, this.fastMath);
	}

	/** The one output array, such as {@code "float[] result"}: one element, or one per segment. */
	public ReductionKernel out(String declaration) {
		return new ReductionKernel(this.name, this.in, Sources.require(declaration, "declaration"), this.map, this.reduce,
				this.identity, this.postMap, this.segmented, this.fastMath);
	}

	/** The value of element {@code i}, such as {@code "x * x"}; its type is the type reduced. */
	public ReductionKernel map(String expression) {
		return new ReductionKernel(this.name, this.in, this.out, Sources.require(expression, "expression"), this.reduce,
				this.identity, this.postMap, this.segmented, this.fastMath);
	}

	/** How two values {@code a} and {@code b} combine, such as {@code "a + b"} or {@code "fmax(a, b)"}. */
	public ReductionKernel reduce(String expression) {
		return new ReductionKernel(this.name, this.in, this.out, this.map, Sources.require(expression, "expression"),
				this.identity, this.postMap, this.segmented, this.fastMath);
	}

	/**
	 * The result of reducing nothing (an empty input), such as {@code "0.0f"}; {@code -0.0f} is the
	 * exact identity of {@code a + b}.
	 */
	public ReductionKernel identity(String expression) {
		return new ReductionKernel(this.name, this.in, this.out, this.map, this.reduce,
				Sources.require(expression, "expression"), this.postMap, this.segmented, this.fastMath);
	}

	/**
	 * What is written, from the reduced value {@code a} (and the scalar inputs, {@code n}), such as
	 * {@code "sqrt(a)"} or {@code "a / n"}. Without one, {@code a} is written.
	 */
	public ReductionKernel postMap(String expression) {
		return new ReductionKernel(this.name, this.in, this.out, this.map, this.reduce, this.identity,
				Sources.require(expression, "expression"), this.segmented, this.fastMath);
	}

	/**
	 * Reduces fixed-size segments instead of the whole input: the kernel takes {@code int n, int
	 * segmentLength} and writes {@code result[s]} for each of the {@code ceil(n / segmentLength)}
	 * segments (the last may be shorter), in one launch.
	 */
	public ReductionKernel segmented() {
		return new ReductionKernel(this.name, this.in, this.out, this.map, this.reduce, this.identity, this.postMap,
				true, this.fastMath);
	}

	/**
	 * Compiles the CUDA code with {@code --use_fast_math}, <b>giving up bit parity</b> with the CPU
	 * backend (see {@link ElementwiseKernel#fastMathGivingUpBitParity()}).
	 */
	public ReductionKernel fastMathGivingUpBitParity() {
		return new ReductionKernel(this.name, this.in, this.out, this.map, this.reduce, this.identity, this.postMap,
				this.segmented, true);
	}

	/**
	 * Parses and checks the definition, generates both backends' code and compiles the Java body.
	 * @throws KernelExpressionException on a mistake, with its position
	 * @throws IllegalStateException when map, reduce or identity is missing
	 */
	public Reduction build() {
		if (this.map == null || this.reduce == null || this.identity == null) {
			throw new IllegalStateException("Reduction '" + this.name + "' needs " + ((this.map == null) ? "map(...)"
					: (this.reduce == null) ? "reduce(...)" : "identity(...)") + ": a reduction has a map, a reduce "
					+ "expression and an identity");
		}
		String post = (this.postMap != null) ? this.postMap : "a";
		Generated generated;
		try {
			generated = ReductionGenerator.generate(this.name, this.in, this.out, this.map, this.reduce, this.identity, post,
					this.segmented);
		}
		catch (ExpressionError ex) {
			Map<String, String> texts = new LinkedHashMap<>();
			texts.put("in", this.in);
			texts.put("out", this.out);
			texts.put("map", this.map);
			texts.put("reduce", this.reduce);
			texts.put("identity", this.identity);
			texts.put("postMap", post);
			throw Sources.failure(this.name, ex, texts);
		}
		return new Reduction(Sources.source(generated, this.fastMath), this.segmented, generated.partials());
	}

	@Override
	public String toString() {
		return "ReductionKernel[" + this.name + (this.segmented ? ", segmented" : "") + ": map " + this.map + ", reduce "
				+ this.reduce + ", identity " + this.identity + (this.postMap != null ? ", postMap " + this.postMap : "") + "]";
	}

}
